// SPDX-License-Identifier: MIT
// detrain: command-line entry point; subcommands live in apps/<name>_cmd.cpp.
#include <cstdio>

int main(int argc, char** argv) {
    std::fprintf(stderr, "detrain: not built yet\n");
    return 1;
}
