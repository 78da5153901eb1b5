// SPDX-License-Identifier: MIT
// DT_TARGET_CLONES: one clone of a function per x86 vector ISA (AVX-512, AVX2, baseline), chosen
// at load time by an ifunc resolver. Every function so marked is written to give the same bits
// in every clone (no reordering, -ffp-contract=off), so which clone runs changes speed only.
// Off under ThreadSanitizer: TSan instruments the resolver, which the dynamic loader runs before
// TSan's runtime is initialised (a crash at start-up); the baseline clone is then used.
#pragma once

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DT_NO_TARGET_CLONES 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define DT_NO_TARGET_CLONES 1
#endif

#if defined(DT_NO_TARGET_CLONES)
#define DT_TARGET_CLONES
#else
#define DT_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
