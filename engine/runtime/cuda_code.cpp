// SPDX-License-Identifier: MIT
#include "engine/runtime/cuda_code.h"

#include <cctype>
#include <vector>

#include "engine/core/error.h"

namespace dt::cuda_device {

namespace {

/// One CMake entry: "90", "90-real", "90a-virtual", "100f", ...
struct Arch {
    int major = 0, minor = 0;
    char suffix = 0;  // 0, 'a' (this capability only) or 'f' (its family: the same major)
    bool real = false, virtual_ = false;
    std::string name;  // "90a": sm_<name>, compute_<name>
};

bool parse_entry(std::string_view e, Arch* a) {
    std::size_t i = 0;
    int n = 0;
    while (i < e.size() && std::isdigit(static_cast<unsigned char>(e[i])) != 0 && n < 10000) {
        n = n * 10 + (e[i] - '0');
        ++i;
    }
    if (i == 0 || n < 10) return false;
    a->major = n / 10;
    a->minor = n % 10;
    if (i < e.size() && (e[i] == 'a' || e[i] == 'f')) a->suffix = e[i++];
    a->name = std::string(e.substr(0, i));
    const std::string_view kind = e.substr(i);
    a->real = kind.empty() || kind == "-real";
    a->virtual_ = kind.empty() || kind == "-virtual";
    return a->real || a->virtual_;
}

/// The entries, or false when one is not a numbered architecture ("native", "all", ...).
bool parse_list(std::string_view list, std::vector<Arch>* out) {
    while (!list.empty()) {
        const std::size_t cut = list.find_first_of(";,");
        std::string_view e = list.substr(0, cut);
        while (!e.empty() && e.front() == ' ') e.remove_prefix(1);
        while (!e.empty() && e.back() == ' ') e.remove_suffix(1);
        if (!e.empty()) {
            Arch a;
            if (!parse_entry(e, &a)) return false;
            out->push_back(a);
        }
        list = cut == std::string_view::npos ? std::string_view{} : list.substr(cut + 1);
    }
    return !out->empty();
}

bool machine_code_runs(const Arch& a, int major, int minor) {
    if (a.suffix == 'a') return a.major == major && a.minor == minor;
    return a.major == major && a.minor <= minor;
}

bool ptx_compiles(const Arch& a, int major, int minor) {
    if (a.suffix == 'a') return a.major == major && a.minor == minor;
    if (a.suffix == 'f') return a.major == major && a.minor <= minor;
    return a.major < major || (a.major == major && a.minor <= minor);
}

std::string code_list(const std::vector<Arch>& archs) {
    std::string s;
    for (const Arch& a : archs) {
        if (a.real) s += (s.empty() ? "" : ", ") + str("sm_", a.name);
        if (a.virtual_) s += (s.empty() ? "" : ", ") + str("compute_", a.name, " PTX");
    }
    return s;
}

/// The CMake setting that builds machine code for a device of capability major.minor.
std::string rebuild_for(int major, int minor) {
    return str("rebuild with -DCMAKE_CUDA_ARCHITECTURES=", major, minor);
}

}  // namespace

CodeReport code_fit(std::string_view architectures, int major, int minor) {
    std::vector<Arch> archs;
    if (!parse_list(architectures, &archs)) {
        return {CodeFit::kUnknown, str("kernels built for '", architectures, "'")};
    }
    const std::string device = str("sm_", major, minor);
    const Arch* ptx = nullptr;  // the newest PTX that compiles for the device
    for (const Arch& a : archs) {
        if (a.real && machine_code_runs(a, major, minor)) {
            return {CodeFit::kMachineCode, str("kernels in sm_", a.name, " machine code")};
        }
        if (a.virtual_ && ptx_compiles(a, major, minor) &&
            (ptx == nullptr || a.major * 10 + a.minor > ptx->major * 10 + ptx->minor)) {
            ptx = &a;
        }
    }
    if (ptx != nullptr) {
        return {
            CodeFit::kPtxJit,
            str("kernels compiled by the driver from compute_", ptx->name,
                " PTX at their first launch (this build has ", code_list(archs), ", no ", device,
                " machine code): the first run can take minutes to start (the driver "
                "caches the result); ",
                rebuild_for(major, minor), " for machine code")};
    }
    return {CodeFit::kNone, str("this build has no code a ", device, " device runs (it has ",
                                code_list(archs), "): ", rebuild_for(major, minor))};
}

CodeReport device_code_report(std::string_view architectures, int major, int minor,
                              const RuntimeAnswer& runtime) {
    if (architectures == "emulated") return {CodeFit::kMachineCode, "kernels emulated on the host"};
    CodeReport r = code_fit(architectures, major, minor);
    if (!runtime.runs && r.fit != CodeFit::kNone) {
        return {CodeFit::kNone,
                str("this build's kernels (built for '", architectures, "') do not run on a sm_",
                    major, minor, " device (", runtime.error, "): ", rebuild_for(major, minor))};
    }
    if (runtime.runs && r.fit == CodeFit::kNone) {  // by a rule code_fit does not know
        return {CodeFit::kUnknown, str("kernels built for '", architectures, "' (sm_",
                                       runtime.binary_version, " code loaded)")};
    }
    return r;
}

}  // namespace dt::cuda_device
