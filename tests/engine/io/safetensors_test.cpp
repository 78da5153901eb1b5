// SPDX-License-Identifier: MIT
// safetensors: round trip, atomic write failures, one test per corrupt-file fault (each must be
// an IoError naming the file and the fault), and an independent parse of our output by python3
// (standard library only) so the format is not only checked against our own reader.
#include "engine/io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace dt {
namespace {

namespace fs = std::filesystem;

class SafetensorsTest : public ::testing::Test {
 protected:
    std::string path(const std::string& name) const { return dir_ / name; }
    test::TempDir dir_;  // a fresh folder per test
};

io::NamedTensors sample_tensors() {
    Tensor i32 = Tensor::empty({3}, DType::kI32);
    for (int i = 0; i < 3; ++i) i32.data<int32_t>()[i] = -7 + 5 * i;
    return {{"conv1.weight", Tensor::from_vector({2, 1, 2, 2}, {1.5f, -2.25f, 0.0f, 3.0f, 4.0f,
                                                                -0.5f, 1e-3f, 7.0f})},
            {"a.first_alphabetically", Tensor::from_vector({2}, {-1.0f, 2.0f})},
            {"empty", Tensor::zeros({0, 4})},
            {"scalar", Tensor::from_vector({}, {42.0f})},
            {"labels", Tensor::from_vector_i64({2}, {-3, int64_t{1} << 40})},
            {"idx", i32}};
}

std::string read_bytes(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_bytes(const std::string& p, const std::string& bytes) {
    std::ofstream f(p, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// 8-byte little-endian length + header (unpadded) + data.
std::string raw_file(const std::string& header, const std::string& data) {
    const uint64_t n = header.size();
    std::string out(8, '\0');
    std::memcpy(out.data(), &n, 8);
    return out + header + data;
}

TEST_F(SafetensorsTest, RoundTripKeepsOrderValuesAndMetadata) {
    const io::NamedTensors in = sample_tensors();
    const io::Metadata meta = {{"format", "pt"}, {"detrain.model", "smallcnn"}, {"empty", ""}};
    const std::string p = path("w.safetensors");
    io::save_safetensors(p, in, meta);
    EXPECT_FALSE(fs::exists(p + ".tmp"));
    const std::string bytes = read_bytes(p);
    EXPECT_EQ(bytes, io::encode_safetensors(in, meta));
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    EXPECT_EQ((8 + n) % 8, 0u);
    EXPECT_EQ(bytes[8], '{');

    const io::SafetensorsFile out = io::load_safetensors(p);
    EXPECT_EQ(out.metadata, meta);
    ASSERT_EQ(out.tensors.size(), in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        const auto& [name, t] = out.tensors[i];
        EXPECT_EQ(name, in[i].first);
        EXPECT_EQ(t.shape(), in[i].second.shape()) << name;
        EXPECT_EQ(t.dtype(), in[i].second.dtype()) << name;
        EXPECT_EQ(
            std::memcmp(t.impl().storage->data, in[i].second.impl().storage->data, t.nbytes()), 0)
            << name;
    }
    ASSERT_NE(out.find("labels"), nullptr);
    EXPECT_EQ(out.find("labels")->data<int64_t>()[1], int64_t{1} << 40);
    EXPECT_EQ(out.find("nope"), nullptr);

    // Overwriting an existing file works and replaces it.
    io::save_safetensors(p, {{"x", Tensor::from_vector({1}, {9.0f})}});
    EXPECT_EQ(io::load_safetensors(p).tensors.size(), 1u);
    EXPECT_TRUE(io::load_safetensors(p).metadata.empty());
}

TEST_F(SafetensorsTest, WriterRejectsBadNames) {
    Tensor t = Tensor::zeros({1});
    EXPECT_THROW(io::save_safetensors(path("a"), {{"x", t}, {"x", t}}), ValueError);
    EXPECT_THROW(io::save_safetensors(path("a"), {{"", t}}), ValueError);
    EXPECT_THROW(io::save_safetensors(path("a"), {{"__metadata__", t}}), ValueError);
    EXPECT_THROW(io::save_safetensors(path("a"), {{"u", Tensor()}}), ValueError);
    EXPECT_FALSE(fs::exists(path("a")));
    EXPECT_FALSE(fs::exists(path("a.tmp")));
}

TEST_F(SafetensorsTest, WriteFailuresNameThePathAndRemoveTheTempFile) {
    const std::string missing = path("no_such_dir/w.safetensors");
    try {
        io::save_safetensors(missing, sample_tensors());
        FAIL() << "expected IoError";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos)
            << e.what();
    }
    // Renaming over a non-empty directory fails after the temp file was written.
    const std::string target = path("is_a_dir");
    fs::create_directories(target + "/child");
    try {
        io::save_safetensors(target, sample_tensors());
        FAIL() << "expected IoError";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("rename"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(target), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(target + ".tmp"));
    EXPECT_TRUE(fs::is_directory(target));
}

struct CorruptCase {
    const char* label;
    std::string bytes;
    const char* fault;  // substring the message must contain
};

TEST_F(SafetensorsTest, EveryCorruptFileIsAnIoErrorNamingFileAndFault) {
    const std::string f4(8, '\0');  // two F32 zeros
    const std::string good = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    std::string truncated = io::encode_safetensors(sample_tensors());
    truncated.resize(truncated.size() - 4);
    std::string huge_len(8, '\xff');
    const CorruptCase cases[] = {
        {"short", "abc", "too short"},
        {"zero header length", raw_file("", f4), "header length 0"},
        {"header longer than file", huge_len + "{}", "header length"},
        {"not json", raw_file(R"({"t": {"dtype": "F32",)", f4), "not valid JSON"},
        {"not an object", raw_file("[1, 2]", f4), "must be a JSON object"},
        {"unknown dtype", raw_file(R"({"t":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}})", f4),
         "unsupported dtype \"F16\""},
        {"size mismatch", raw_file(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f4),
         "needs 12"},
        {"out of range", raw_file(R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", f4),
         "out of range"},
        {"truncated data", truncated, "out of range"},
        {"overlap",
         raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                  R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                  f4),
         "overlap"},
        {"gap", raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f4),
         "gap of 4 bytes"},
        {"trailing", raw_file(good, f4 + "xyz"), "3 trailing bytes"},
        {"duplicate name",
         raw_file(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                  R"("t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                  f4),
         "repeats the key 't'"},
        {"negative dim", raw_file(R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", f4),
         "non-negative integer"},
        {"float offset",
         raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8.0]}})", f4),
         "non-negative integer"},
        {"end before begin",
         raw_file(R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", f4),
         "end before begin"},
        {"missing field", raw_file(R"({"t":{"dtype":"F32","shape":[2]}})", f4), "needs dtype"},
        {"unknown field",
         raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", f4),
         "unknown key 'x'"},
        {"metadata not strings", raw_file(R"({"__metadata__":{"k":1},)" + good.substr(1), f4),
         "__metadata__ value of 'k'"},
        {"entry not object", raw_file(R"({"t":[1]})", f4), "entry must be an object"},
    };
    for (const CorruptCase& c : cases) {
        SCOPED_TRACE(c.label);
        const std::string p = path("corrupt.safetensors");
        write_bytes(p, c.bytes);
        try {
            (void)io::load_safetensors(p);
            ADD_FAILURE() << c.label << ": no error";
        } catch (const IoError& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find(p), std::string::npos) << msg;
            EXPECT_NE(msg.find(c.fault), std::string::npos)
                << "want '" << c.fault << "' in: " << msg;
        }
    }
    // The good header itself parses (the cases differ from it only by their fault).
    EXPECT_EQ(io::decode_safetensors(raw_file(good, f4), "good").tensors.size(), 1u);
    try {
        (void)io::load_safetensors(path("absent.safetensors"));
        ADD_FAILURE() << "no error for a missing file";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
    }
}

// ---- independent check with python3 (struct + json only) ----

constexpr const char* kPythonCheck = R"PY(
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
(n,) = struct.unpack('<Q', b[:8])
assert (8 + n) % 8 == 0, 'header not padded to 8'
text = b[8:8 + n].decode('utf-8')
h = json.loads(text)
meta = h.pop('__metadata__', {})
data = b[8 + n:]
fmt = {'F32': ('<f', 4), 'I32': ('<i', 4), 'I64': ('<q', 8)}
end = 0
for name, e in sorted(h.items(), key=lambda kv: kv[1]['data_offsets'][0]):
    lo, hi = e['data_offsets']
    f, size = fmt[e['dtype']]
    count = 1
    for d in e['shape']:
        count *= d
    assert hi - lo == count * size, name
    assert lo == end, name
    end = hi
    vals = [struct.unpack(f, data[lo + i * size:lo + (i + 1) * size])[0]
            for i in range(min(count, 3))]
    print(name, e['dtype'], e['shape'], lo, hi, vals)
assert end == len(data), 'data section not covered'
print('meta', sorted(meta.items()))
)PY";

TEST_F(SafetensorsTest, Python3ParsesOurFiles) {
    if (std::system("python3 -c 'import json, struct' >/dev/null 2>&1") != 0) {
        GTEST_SKIP() << "python3 not available";
    }
    const std::string st = path("w.safetensors");
    const std::string script = path("check.py");
    io::save_safetensors(st, sample_tensors(), {{"format", "pt"}, {"step", "30"}});
    write_bytes(script, kPythonCheck);
    std::FILE* pipe = ::popen(("python3 '" + script + "' '" + st + "' 2>&1").c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string out;
    char buf[512];
    while (std::fgets(buf, sizeof(buf), pipe) != nullptr) out += buf;
    const int rc = ::pclose(pipe);
    ASSERT_EQ(rc, 0) << out;
    EXPECT_EQ(out,
              "conv1.weight F32 [2, 1, 2, 2] 0 32 [1.5, -2.25, 0.0]\n"
              "a.first_alphabetically F32 [2] 32 40 [-1.0, 2.0]\n"
              "empty F32 [0, 4] 40 40 []\n"
              "scalar F32 [] 40 44 [42.0]\n"
              "labels I64 [2] 44 60 [-3, 1099511627776]\n"
              "idx I32 [3] 60 72 [-7, -2, 3]\n"
              "meta [('format', 'pt'), ('step', '30')]\n");
}

}  // namespace
}  // namespace dt
