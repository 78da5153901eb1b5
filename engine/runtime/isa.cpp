// SPDX-License-Identifier: MIT
#include "engine/runtime/isa.h"

#include "engine/core/error.h"
#include "engine/core/text.h"

namespace dt {

namespace {

std::vector<std::string> names_of(const std::vector<CpuIsa>& isas) {
    std::vector<std::string> v;
    for (CpuIsa i : isas) v.emplace_back(cpu_isa_name(i));
    return v;
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) { return kernels::cpu::cpu_isa_name(isa); }

CpuIsa cpu_isa_from_name(const std::string& name) {
    CpuIsa isa;
    if (kernels::cpu::cpu_isa_from_name(name.c_str(), &isa)) return isa;
    throw ValueError(str("unknown instruction set '", name, "' (known: ",
                         join_text(names_of({std::begin(kernels::kCpuIsas),
                                             std::end(kernels::kCpuIsas)}),
                                   ", "),
                         ")"));
}

bool cpu_isa_supported(CpuIsa isa) { return kernels::cpu::cpu_isa_supported(isa); }

std::vector<CpuIsa> supported_cpu_isas() {
    std::vector<CpuIsa> v;
    for (CpuIsa i : kernels::kCpuIsas)
        if (cpu_isa_supported(i)) v.push_back(i);
    return v;
}

CpuIsa cpu_isa() { return kernels::cpu::cpu_isa(); }

std::vector<IsaDispatchedKernel> isa_dispatched_kernels() {
    std::vector<IsaDispatchedKernel> v;
    for (const kernels::cpu::IsaDispatch& d : kernels::cpu::isa_dispatches())
        v.push_back({d.name, d.last < 0 ? "" : cpu_isa_name(static_cast<CpuIsa>(d.last))});
    return v;
}

void set_cpu_isa(CpuIsa isa) {
    DT_CHECK_VALUE(kernels::cpu::cpu_isa_set(isa), "this CPU cannot run the ", cpu_isa_name(isa),
                   " instruction set (it has: ", join_text(names_of(supported_cpu_isas()), ", "),
                   ")");
}

}  // namespace dt
