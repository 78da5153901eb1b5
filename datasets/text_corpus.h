// SPDX-License-Identifier: MIT
// Byte-level language-modelling corpus: a token is a byte (vocabulary 256, no tokenizer to
// version). A corpus is one UTF-8 text file, plain or gzip (detected by the 1f 8b magic bytes, not
// by the name), split once into training bytes and validation bytes.
//
// Default corpus: "The Devil's Dictionary" by Ambrose Bierce (public domain, copyright expired),
// /usr/share/dictd/devil.dict.dz from the Debian package dict-devil (scripts/setup.sh installs
// it). That file is dictzip, which zlib's gzip reader reads as plain gzip (concatenated gzip
// members are read in turn; bytes after the last one are ignored, as gunzip does). Its bytes are
// used as they are: 383,656 bytes of 7-bit ASCII (no byte >= 0x80, no NUL), 8,552 lines. They
// are the book as the Internet Wiretap edition laid it out: headword lines ("ZEUS, n.  The chief
// of ...") with wrapped text, quotations indented by spaces, a blank line between entries. The
// first 2,944 bytes are dictfmt's 00-database-* entries (format version, source URL, title, and
// an info entry holding a note, the edition's public-domain notice and Bierce's preface); the
// words run from "ABASEMENT" to "ZOOLOGY"; the last 28 bytes are the alphabet entry
// " abcdefghijklmnopqrstuvwxyz". All are kept: they are text too. Unigram entropy of its
// training split: 4.4637 bits per byte (whole file 4.4641, validation split 4.4604).
//
// Split: of n bytes, the last v = llround(validation_fraction * n) are validation (round half
// away from zero; 10% of 383,656 is 38,365.6, so v = 38,366), the first n - v are training.
//
// Windows (the samples): a split of `bytes` bytes is cut into windows of context + 1 bytes that
// start every `context` bytes, window i = bytes [i*context, i*context + context + 1):
//   tokens[t] = split[i*context + t], targets[t] = split[i*context + t + 1],  t in [0, context)
// Consecutive windows share one byte (the last target of i is the first token of i+1), so every
// byte after the first is a target exactly once, except the (bytes - 1) % context bytes of the
// tail that do not fill a window. Window index = sample index: epoch e of a run takes the windows
// in the order epoch_permutation(corpus_windows(train.size(), context), seed, e) (sampler.h),
// batch b the entries [b*B, (b+1)*B) of it, as BatchLoader does with images; evaluation takes
// the validation windows in index order (identity_permutation).
//
// Checks, in this order, before any byte is kept (ValueError for an argument, IoError naming the
// file otherwise): context in [1, 2^30] and validation_fraction in (0, 1); the file exists and
// opens; a gzip stream decompresses to its end; the file is not empty; it is text; each split holds
// at least one window (context + 1 bytes). "Text" means no NUL byte and at most 1% of the bytes
// outside valid UTF-8 sequences (RFC 3629: no overlong forms, surrogates or code points above
// U+10FFFF), so a few stray Latin-1 bytes in a UTF-8 file are accepted and a binary file is not.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.h"

namespace dt {

constexpr int kTextVocabSize = 256;                   // a token is a byte
constexpr double kTextMaxInvalidUtf8Fraction = 0.01;  // more invalid bytes than this: binary

struct TextCorpus {
    std::string name;                 // the file's name without its folder, e.g. "devil.dict.dz"
    std::vector<uint8_t> train;       // the first n - v bytes of the text
    std::vector<uint8_t> validation;  // the last v bytes (the split above)
    double train_entropy_bits = 0;    // unigram_entropy_bits(train): bits per byte
};

/// /usr/share/dictd/devil.dict.dz, where Debian's dict-devil installs The Devil's Dictionary.
std::string default_corpus_path();

/// Reads `path` (plain or gzip UTF-8 text) and splits it (the split above). Every check listed
/// above runs before the split; each error names the file and the fix.
TextCorpus load_text_corpus(const std::string& path, int64_t context,
                            double validation_fraction = 0.1);

/// Windows of context + 1 bytes starting every `context` bytes in a split of `bytes` bytes:
/// (bytes - 1) / context when bytes >= context + 1, else 0. Throws ValueError for context < 1
/// or bytes < 0.
int64_t corpus_windows(int64_t bytes, int64_t context);

/// Fills tokens[0, context) and targets[0, context) (each byte as an int32 in [0, 256)) with
/// window `index` of `split`: targets are tokens shifted by one byte. Throws ValueError for
/// context < 1 or index outside [0, corpus_windows(split.size(), context)).
void corpus_window(const std::vector<uint8_t>& split, int64_t index, int64_t context,
                   int32_t* tokens, int32_t* targets);

/// The corpus's windows as data sets for BatchLoader (Dataset::context = context): example i of a
/// split is window i, its context + 1 bytes (tokens then the last target), label 0. Names
/// "<corpus name>/train" and "<corpus name>/validation" (the validation windows are the test
/// split). Throws ValueError when a split holds no window.
DatasetSplits text_dataset(const TextCorpus& corpus, int64_t context);

/// Unigram entropy in bits per byte, -sum_b p_b log2 p_b with p_b = count_b / n: what a model
/// that knows only the byte frequencies of the text pays per byte of it. The terms are summed in
/// double in byte value order 0..255, so the figure depends on the histogram only. 0 for an empty
/// text.
double unigram_entropy_bits(const std::vector<uint8_t>& bytes);

}  // namespace dt
