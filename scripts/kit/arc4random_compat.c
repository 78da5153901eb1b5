// SPDX-License-Identifier: MIT
// Linked into the GPU kit's executables only (scripts/gpu_kit.sh). The kit links libstdc++
// statically, and libstdc++'s std::random_device object (pulled in by its string and exception
// objects, whatever the program uses) calls arc4random, which glibc has only since 2.36: without
// this definition the kit would not load on a GPU host older than Debian 12 (Ubuntu 22.04 has
// glibc 2.35, RHEL 9 and Amazon Linux 2023 2.34). Defined here, the call binds to this function
// at link time, which reads the same kernel entropy through getrandom (glibc 2.25).
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/types.h>

uint32_t arc4random(void) {
    uint32_t v = 0;
    unsigned char* p = (unsigned char*)&v;
    size_t got = 0;
    while (got < sizeof v) {
        const ssize_t r = getrandom(p + got, sizeof v - got, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            abort();  // no entropy source at all: glibc's arc4random cannot fail either
        }
        got += (size_t)r;
    }
    return v;
}
