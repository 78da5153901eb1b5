// SPDX-License-Identifier: MIT
// Fibers for the threads of a block: a thread that reaches __syncthreads switches back
// to the scheduler, which resumes the next thread; when every thread of the block waits at the
// barrier, the next phase starts. A block whose first thread finishes without a barrier has none
// (barriers are reached by every thread of a block or by none): its other threads run as plain
// calls, without a fiber's two switches each.
#include "tests/hostcuda/fibers.h"

#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "tests/hostcuda/cuda_runtime.h"

// ucontext's swapcontext makes a system call a switch (the signal mask), which was most of an
// emulated training step's time; on x86-64 a switch is six callee-saved registers and the stack
// pointer (fibers share the floating-point environment, so MXCSR and the x87 control word stay).
#if defined(__x86_64__)
extern "C" void dt_hostcuda_switch(void** save_sp, void* load_sp);
asm(R"(
    .text
    .globl dt_hostcuda_switch
    .type dt_hostcuda_switch, @function
dt_hostcuda_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size dt_hostcuda_switch, .-dt_hostcuda_switch
)");
#endif

namespace dt::hostcuda {

namespace {

constexpr std::size_t kStackBytes = std::size_t{512} << 10;  // a device thread's locals, and more

struct Context {
#if defined(__x86_64__)
    void* sp = nullptr;
#else
    ucontext_t uc{};
#endif
    // Its stack, for AddressSanitizer's fiber switches (the host thread's: learned on the first
    // switch from it).
    const void* bottom = nullptr;
    std::size_t size = 0;
};

struct Fiber {
    Context context;
    void* stack = nullptr;  // kStackBytes past a guard page
    bool done = false;
    bool at_barrier = false;
};

struct Scheduler {
    Context home;
    std::vector<std::unique_ptr<Fiber>> fibers;  // grown to the largest block, kept
    Fiber* running = nullptr;                    // nullptr: a thread running as a plain call
    unsigned thread = 0;
    const std::function<void()>* run = nullptr;
    std::vector<unsigned> order;  // a phase's threads in the order they run
};

Scheduler& scheduler() {
    static thread_local Scheduler s;
    return s;
}

[[noreturn]] void fatal(const char* what) {
    std::fprintf(stderr, "hostcuda: %s\n", what);
    std::fflush(stderr);
    std::abort();
}

void* new_stack() {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    void* p = ::mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) fatal("no memory for a device thread's stack");
    ::mprotect(p, page, PROT_NONE);  // an overflowing device thread faults here
    return static_cast<char*>(p) + page;
}

/// Switches from the running context (`save`) to `load`; returns when something switches back.
/// `save_ends`: `save` never runs again (a finished fiber).
void switch_to(Context& save, Context& load, bool save_ends = false) {
#if defined(__SANITIZE_ADDRESS__)
    // AddressSanitizer is told of every stack switch, or it takes the fiber's frames for the
    // host thread's and reports nonsense.
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(save_ends ? nullptr : &fake_stack, load.bottom, load.size);
#else
    (void)save_ends;
#endif
#if defined(__x86_64__)
    dt_hostcuda_switch(&save.sp, load.sp);
#else
    swapcontext(&save.uc, &load.uc);
#endif
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
}

/// A fiber's first and only frame: runs the thread's program, then switches home for good.
[[noreturn]] void fiber_main() {
    Scheduler& s = scheduler();
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(nullptr, &s.home.bottom, &s.home.size);
#endif
    (*s.run)();
    s.running->done = true;
    switch_to(s.running->context, s.home, /*save_ends=*/true);
    fatal("a finished device thread was resumed");
}

/// Makes `f` start at fiber_main when switched to.
void prepare(Fiber& f) {
    // A finished fiber's frames may have left poisoned redzones on the stack (no-op without ASan).
    ASAN_UNPOISON_MEMORY_REGION(f.stack, kStackBytes);
    f.context.bottom = f.stack;
    f.context.size = kStackBytes;
#if defined(__x86_64__)
    // The stack as dt_hostcuda_switch leaves it: six saved registers (zero), then the address it
    // returns to (fiber_main), then a null return address for fiber_main's frame, which keeps
    // the ABI's 16-byte alignment at its entry.
    auto* top = reinterpret_cast<uintptr_t*>(static_cast<char*>(f.stack) + kStackBytes);
    top[-1] = 0;
    top[-2] = reinterpret_cast<uintptr_t>(&fiber_main);
    for (int k = 3; k <= 8; ++k) top[-k] = 0;
    f.context.sp = top - 8;
#else
    getcontext(&f.context.uc);
    f.context.uc.uc_stack.ss_sp = f.stack;
    f.context.uc.uc_stack.ss_size = kStackBytes;
    f.context.uc.uc_link = nullptr;
    makecontext(&f.context.uc, reinterpret_cast<void (*)()>(&fiber_main), 0);
#endif
}

void set_thread(unsigned t) {
    scheduler().thread = t;
    threadIdx = uint3{t, 0, 0};
}

/// Runs fiber t, from the start of the thread's program, until it waits or finishes.
void start(Scheduler& s, unsigned t) {
    Fiber& f = *s.fibers[t];
    if (f.stack == nullptr) f.stack = new_stack();
    prepare(f);
    f.done = false;
    f.at_barrier = false;
    s.running = &f;
    set_thread(t);
    switch_to(s.home, f.context);
    s.running = nullptr;
}

void resume(Scheduler& s, unsigned t) {
    Fiber& f = *s.fibers[t];
    f.at_barrier = false;
    s.running = &f;
    set_thread(t);
    switch_to(s.home, f.context);
    s.running = nullptr;
}

}  // namespace

void run_block(unsigned threads, const std::function<void()>& run, const PhaseOrder& order) {
    Scheduler& s = scheduler();
    if (s.run != nullptr) fatal("a kernel launched from device code");
    s.run = &run;
    while (s.fibers.size() < threads) s.fibers.push_back(std::make_unique<Fiber>());
    std::vector<unsigned>& ks = s.order;  // the phase's threads in the order they run
    ks.resize(threads);
    order(0, ks);
    start(s, ks[0]);
    if (s.fibers[ks[0]]->done) {
        for (unsigned k = 1; k < threads; ++k) {
            set_thread(ks[k]);
            run();
        }
        s.run = nullptr;
        return;
    }
    for (unsigned k = 1; k < threads; ++k) start(s, ks[k]);
    for (unsigned phase = 1;; ++phase) {
        unsigned waiting = 0;
        for (unsigned t = 0; t < threads; ++t) waiting += s.fibers[t]->at_barrier ? 1 : 0;
        if (waiting == 0) break;
        if (waiting != threads) {
            std::fprintf(stderr,
                         "hostcuda: block (%u,%u,%u): %u of %u threads wait at __syncthreads "
                         "(barrier %u) while the others have finished\n",
                         blockIdx.x, blockIdx.y, blockIdx.z, waiting, threads, phase);
            fatal("a barrier not reached by every thread of its block");
        }
        order(phase, ks);
        for (unsigned k = 0; k < threads; ++k) resume(s, ks[k]);
    }
    s.run = nullptr;
}

void block_barrier() {
    Scheduler& s = scheduler();
    if (s.running == nullptr) {
        std::fprintf(stderr,
                     "hostcuda: block (%u,%u,%u) thread %u reached __syncthreads, which the "
                     "block's first thread to run finished without\n",
                     blockIdx.x, blockIdx.y, blockIdx.z, s.thread);
        fatal("a barrier not reached by every thread of its block");
    }
    Fiber& f = *s.running;
    f.at_barrier = true;
    switch_to(f.context, s.home);
}

unsigned running_thread() { return scheduler().thread; }

}  // namespace dt::hostcuda
