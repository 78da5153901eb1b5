// SPDX-License-Identifier: MIT
#include "apps/info/info_cmd.h"

#include <omp.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/common/version.h"
#include "apps/train/train_config.h"
#include "datasets/dataset.h"
#include "engine/runtime/collective.h"
#include "engine/runtime/cuda_device.h"
#include "engine/runtime/isa.h"

namespace dt {
namespace {

/// What `info` reports, gathered once and then printed either way.
struct Info {
    bool cuda_built = false, cuda_available = false;
    std::string cuda_device;  // the device, or why there is none
    std::string cuda_architectures;  // what the kernels were compiled for
    cuda_device::KernelWays cuda_ways;
    bool mpi_built = false;
    std::string mpi_world;  // this process's place in the world
    int max_threads = 0, logical_cores = 0, default_threads = 0;
    std::string isa;                // in force
    std::vector<std::string> isas;  // this CPU runs
    std::vector<std::string> isa_dispatched;  // kernel functions compiled per path
    struct Data {
        std::string name, dir;
        bool found = false;
    };
    std::vector<Data> data;
};

Info gather() {
    Info i;
    i.cuda_built = cuda_device::built();
    i.cuda_available = cuda_device::available();
    i.cuda_device = cuda_device::describe();
    i.cuda_architectures = cuda_device::build_architectures();
    i.cuda_ways = cuda_device::kernel_ways();
    i.mpi_built = mpi_built();
    i.mpi_world = world().describe();
    i.max_threads = omp_get_max_threads();
    i.logical_cores = omp_get_num_procs();
    i.default_threads = default_thread_count();
    i.isa = cpu_isa_name(cpu_isa());
    for (CpuIsa isa : supported_cpu_isas()) i.isas.emplace_back(cpu_isa_name(isa));
    for (const IsaDispatchedKernel& k : isa_dispatched_kernels())
        i.isa_dispatched.push_back(k.name);
    for (const std::string& name : dataset_names()) {
        const std::string dir = default_data_dir(name);
        std::error_code ec;
        i.data.push_back({name, dir, std::filesystem::exists(dir, ec)});  // text: a file
    }
    return i;
}

void print_text(const Info& i) {
    std::printf("detrain %s\n", version_string());
    const std::string backend =
        i.cuda_built ? "compiled in (--device cuda), CUDA architectures " + i.cuda_architectures
                     : "not compiled (configure with -DDT_ENABLE_CUDA=ON and nvcc on PATH)";
    std::printf("  cuda backend    %s\n", backend.c_str());
    std::printf("  cuda device     %s\n", i.cuda_device.c_str());
    if (i.cuda_built)
        std::printf(
            "  cuda kernels    tiles %s ($DT_CUDA_TILE), exact wgrad %s ($DT_CUDA_EXACT_WGRAD), "
            "channel leaves %s ($DT_CUDA_CHANNEL_LEAVES), undefined memory %s "
            "($DT_CUDA_POISON)\n",
            i.cuda_ways.tile.c_str(), i.cuda_ways.exact_wgrad.c_str(),
            i.cuda_ways.channel_leaves.c_str(), i.cuda_ways.poison ? "poisoned" : "as left");
    std::printf("  mpi             %s\n",
                i.mpi_built ? ("compiled in (mpirun -np P detrain train/study: "
                               "docs/distributed.md); this process: " +
                               i.mpi_world)
                                  .c_str()
                            : "not compiled (scripts/setup.sh installs Open MPI)");
    std::printf("  openmp threads  %d max (%d logical cores; --threads default %d)\n",
                i.max_threads, i.logical_cores, i.default_threads);
    std::string have;
    for (const std::string& isa : i.isas) have += " " + isa;
    std::printf("  cpu isa         in force %s (--isa, $DT_ISA); this CPU runs:%s\n", i.isa.c_str(),
                have.c_str());
    std::string dispatched = "the GEMM and convolutions";
    for (const std::string& k : i.isa_dispatched) dispatched += ", " + k;
    std::printf("                  followed by %s\n", dispatched.c_str());
    std::printf("  data            default directories (--data-dir overrides):\n");
    for (const Info::Data& d : i.data)
        std::printf("    %-14s %s (%s)\n", d.name.c_str(), d.dir.c_str(),
                    d.found ? "found" : "missing");
}

nlohmann::json to_json(const Info& i) {
    nlohmann::json data = nlohmann::json::object();
    for (const Info::Data& d : i.data) data[d.name] = {{"dir", d.dir}, {"found", d.found}};
    return {
        {"version", version_string()},
        {"cuda",
         {{"built", i.cuda_built},
          {"available", i.cuda_available},
          {"architectures", i.cuda_built ? nlohmann::json(i.cuda_architectures) : nlohmann::json()},
          {"device", i.cuda_device},
          {"kernel_ways", i.cuda_built
                              ? nlohmann::json{{"tile", i.cuda_ways.tile},
                                               {"exact_wgrad", i.cuda_ways.exact_wgrad},
                                               {"channel_leaves", i.cuda_ways.channel_leaves},
                                               {"poison", i.cuda_ways.poison}}
                              : nlohmann::json()}}},
        {"mpi", {{"built", i.mpi_built}, {"process", i.mpi_world}}},
        {"openmp",
         {{"max_threads", i.max_threads},
          {"logical_cores", i.logical_cores},
          {"default_threads", i.default_threads}}},
        {"cpu_isa",
         {{"in_force", i.isa}, {"supported", i.isas}, {"dispatched", i.isa_dispatched}}},
        {"data", data},
    };
}

}  // namespace

CLI::App* add_info_command(CLI::App& app, InfoFlags& flags) {
    CLI::App* info = app.add_subcommand(
        "info",
        "Print the version, compiled backends, the cuda device (or what is missing), CPU "
        "features and data directories");
    info->add_flag("--json", flags.json,
                   "One JSON object on stdout (version, cuda, mpi, openmp, cpu_isa, data)");
    return info;
}

int run_info_command(const InfoFlags& flags) {
    const Info i = gather();
    if (flags.json) {
        std::printf("%s\n", to_json(i).dump(2).c_str());
    } else {
        print_text(i);
    }
    return 0;
}

}  // namespace dt
