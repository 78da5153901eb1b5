// SPDX-License-Identifier: MIT
// The main() of the GPU benches: their run(argc, argv), with an exception (a bad flag, no device,
// a failed launch) reported as "<name>: error: <what>" and exit status 1.
#pragma once
#include <cstdio>
#include <exception>

namespace dt::bench {

inline int run_main(const char* name, int (*run)(int argc, char** argv), int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: error: %s\n", name, e.what());
        return 1;
    }
}

}  // namespace dt::bench
