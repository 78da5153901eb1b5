// SPDX-License-Identifier: MIT
// The CPU kernel table (kernels/kernel_table.h): every entry point of op_list.inc is the cpu::
// function of the same name.
#include "kernels/kernel_table.h"

namespace dt::kernels::cpu {

const KernelTable& kernel_table() {
    static const KernelTable table = [] {
        KernelTable t;
        t.device = "cpu";
#define DT_KERNEL(op, entry) t.entry = &cpu::entry;
#include "kernels/op_list.inc"
        return t;
    }();
    return table;
}

}  // namespace dt::kernels::cpu
