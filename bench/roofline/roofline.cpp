// SPDX-License-Identifier: MIT
// dt_roofline: where a training step's time goes, kernel by kernel, against the machine's FMA
// and memory ceilings measured in the same run (bench/roofline/fma_peak.h).
//
// For each model (the shapes of BM_TrainStep, bench/trainee.h) and preset, it runs one untimed
// step, then --steps steps with every CPU kernel call timed (timed_kernels.h). It prints, as
// Markdown, one table of the convolution and linear kernels (forward, dgrad, wgrad: their bound,
// the longer of the FMA time of their work and the memory time of their operands; ms per step,
// GFLOP/s, fraction of the FMA ceiling and of the bound, per preset) and one of every kernel's
// share of the step,
// with the time outside kernels (the tape, allocations, the ops' own code) as its own row.
// Figures are medians over the timed steps. --json FILE writes every figure.
//
// usage: dt_roofline [--models smallcnn,mediumcnn_k3,resnet18] [--presets deterministic,exact]
//                    [--threads 2] [--steps 3] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/roofline/fma_peak.h"
#include "bench/roofline/timed_kernels.h"
#include "bench/trainee.h"
#include "engine/runtime/isa.h"
#include "engine/runtime/threads.h"

namespace {

using dt::bench::KernelCall;
using Json = nlohmann::ordered_json;

struct Options {
    std::vector<std::string> models{"smallcnn", "mediumcnn_k3", "resnet18"};
    std::vector<std::string> presets{"deterministic", "exact"};
    int threads = 2, steps = 3;
    std::string json;
};

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string part; std::getline(in, part, ',');) out.push_back(part);
    return out;
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--help" || a == "-h") {
            std::puts(
                "dt_roofline: each kernel of a training step against the FMA and memory ceilings\n"
                "  --models LIST   shapes of BM_TrainStep (default "
                "smallcnn,mediumcnn_k3,resnet18)\n"
                "  --presets LIST  --impl presets or modes (default deterministic,exact)\n"
                "  --threads N     threads for the steps and the ceilings (default 2)\n"
                "  --steps N       timed steps per model and preset, after one untimed (default "
                "3)\n"
                "  --json FILE     also write every figure as JSON");
            std::exit(0);
        } else if (a == "--models" && has_value) {
            o.models = split(argv[++i]);
        } else if (a == "--presets" && has_value) {
            o.presets = split(argv[++i]);
        } else if (a == "--threads" && has_value) {
            o.threads = std::stoi(argv[++i]);
        } else if (a == "--steps" && has_value) {
            o.steps = std::stoi(argv[++i]);
        } else if (a == "--json" && has_value) {
            o.json = argv[++i];
        } else {
            throw std::invalid_argument("unknown or incomplete argument '" + a +
                                        "' (hint: dt_roofline --help)");
        }
    }
    if (o.threads < 1 || o.steps < 1)
        throw std::invalid_argument("--threads and --steps must be at least 1");
    return o;
}

const dt::bench::Shape& shape_of(const std::string& name) {
    for (const dt::bench::Shape& s : dt::bench::kTrainStepShapes)
        if (dt::bench::shape_name(s) == name) return s;
    std::string known;
    for (const dt::bench::Shape& s : dt::bench::kTrainStepShapes)
        known += (known.empty() ? "" : ", ") + dt::bench::shape_name(s);
    throw std::invalid_argument("unknown model '" + name + "' (known: " + known + ")");
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// One row of the tables: a kernel at one layer shape (or all calls of a kernel), per step.
struct Row {
    std::string kernel, layer, mode;
    double calls = 0, ms = 0, flops = 0, bytes = 0;
};

/// The machine's limits measured in this run.
struct Ceilings {
    double gflops = 0;  // FMA, at the width the kernels run
    double gbps = 0;    // memory read bandwidth
    /// The least time a row's work can take: its FMA time or its memory time, the longer.
    double bound_ms(const Row& r) const { return std::max(r.flops / gflops, r.bytes / gbps) / 1e6; }
    const char* limit(const Row& r) const {
        return r.flops / gflops >= r.bytes / gbps ? "fma" : "memory";
    }
};

/// Rows in first-call order from the calls of each timed step: ms and flops per step are medians
/// over steps (flops are the same every step).
std::vector<Row> rows_of(const std::vector<std::vector<KernelCall>>& steps, bool by_layer) {
    std::vector<std::string> order;
    std::map<std::string, Row> first;
    std::map<std::string, std::vector<double>> ms;
    for (std::size_t s = 0; s < steps.size(); ++s) {
        std::map<std::string, double> step_ms;
        for (const KernelCall& c : steps[s]) {
            if (by_layer && c.flops == 0) continue;
            const std::string kernel = dt::kernels::kernel_name(c.id);
            const std::string key = kernel + (by_layer ? "|" + c.layer : "");
            if (!first.count(key)) {
                order.push_back(key);
                first[key] = Row{kernel, by_layer ? c.layer : "", c.mode, 0, 0, 0, 0};
            }
            if (s == 0) {
                first[key].calls += 1;
                first[key].flops += c.flops;
                first[key].bytes += c.bytes;
            }
            step_ms[key] += c.seconds * 1e3;
        }
        for (const std::string& key : order) ms[key].push_back(step_ms[key]);
    }
    std::vector<Row> out;
    for (const std::string& key : order) {
        Row r = first[key];
        r.ms = median(ms[key]);
        out.push_back(r);
    }
    return out;
}

struct PresetRun {
    double step_ms = 0;
    std::vector<Row> layers, kernels;
};

PresetRun run_preset(const dt::bench::Shape& shape, const std::string& preset, int steps) {
    const dt::ScopedReduceConfig specs(dt::bench::preset_specs(preset));
    dt::bench::Trainee trainee(shape);
    trainee.step();  // untimed: allocations, page faults, packed weights
    std::vector<std::vector<KernelCall>> calls;
    std::vector<double> step_ms;
    dt::bench::TimedCpuKernels timed;
    for (int s = 0; s < steps; ++s) {
        const auto t0 = std::chrono::steady_clock::now();
        trainee.step();
        step_ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
        calls.push_back(timed.take());
    }
    return {median(step_ms), rows_of(calls, true), rows_of(calls, false)};
}

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

void print_model(const std::string& model, const dt::bench::Shape& shape, const Options& o,
                 const std::vector<PresetRun>& runs, const Ceilings& ceil) {
    std::printf("\n### %s (batch %d, %d threads)\n\nStep: ", model.c_str(), shape.batch, o.threads);
    for (std::size_t p = 0; p < runs.size(); ++p)
        std::printf("%s%s %s ms", p ? ", " : "", o.presets[p].c_str(),
                    fixed(runs[p].step_ms, 1).c_str());
    std::printf(".\n\n| kernel | layer | calls | limit | bound ms |");
    for (const std::string& p : o.presets)
        std::printf(" %s ms | GFLOP/s | of FMA ceiling | of bound |", p.c_str());
    std::printf("\n|---|---|---|---|---|");
    for (std::size_t p = 0; p < runs.size(); ++p) std::printf("---|---|---|---|");
    std::printf("\n");
    const std::vector<Row>& base = runs[0].layers;
    for (std::size_t i = 0; i < base.size(); ++i) {
        const Row& b = base[i];
        std::printf("| %s | %s | %.0f | %s | %s |", b.kernel.c_str(), b.layer.c_str(), b.calls,
                    ceil.limit(b), fixed(ceil.bound_ms(b), 2).c_str());
        for (const PresetRun& run : runs) {
            const Row& r = run.layers.at(i);
            const double gflops = r.ms > 0 ? r.flops / (r.ms * 1e6) : 0;
            std::printf(" %s%s | %s | %s%% | %s%% |", fixed(r.ms, 2).c_str(),
                        r.mode.empty() ? "" : (" (" + r.mode + ")").c_str(),
                        fixed(gflops, 1).c_str(), fixed(100 * gflops / ceil.gflops, 0).c_str(),
                        fixed(r.ms > 0 ? 100 * ceil.bound_ms(r) / r.ms : 0, 0).c_str());
        }
        std::printf("\n");
    }
    std::printf("\nWhere the step's time goes:\n\n| kernel |");
    for (const std::string& p : o.presets) std::printf(" %s ms | share |", p.c_str());
    std::printf("\n|---|");
    for (std::size_t p = 0; p < runs.size(); ++p) std::printf("---|---|");
    std::printf("\n");
    std::vector<std::string> names;
    for (const PresetRun& run : runs)
        for (const Row& r : run.kernels)
            if (std::find(names.begin(), names.end(), r.kernel) == names.end())
                names.push_back(r.kernel);
    names.push_back("outside kernels");
    for (const std::string& name : names) {
        std::printf("| %s |", name.c_str());
        for (const PresetRun& run : runs) {
            double ms = 0, in_kernels = 0;
            for (const Row& r : run.kernels) {
                in_kernels += r.ms;
                if (r.kernel == name) ms = r.ms;
            }
            if (name == "outside kernels") ms = run.step_ms - in_kernels;
            std::printf(" %s | %s%% |", fixed(ms, 2).c_str(),
                        fixed(100 * ms / run.step_ms, 1).c_str());
        }
        std::printf("\n");
    }
}

Json rows_json(const std::vector<Row>& rows, const Ceilings& ceil) {
    Json out = Json::array();
    for (const Row& r : rows) {
        const double gflops = r.ms > 0 ? r.flops / (r.ms * 1e6) : 0;
        Json row = {{"kernel", r.kernel}, {"layer", r.layer},
                    {"mode", r.mode},     {"calls", r.calls},
                    {"ms", r.ms},         {"gflop", r.flops / 1e9},
                    {"gflops", gflops},   {"of_fma_ceiling", gflops / ceil.gflops}};
        if (r.flops > 0) {
            row["mbytes"] = r.bytes / 1e6;
            row["limit"] = ceil.limit(r);
            row["bound_ms"] = ceil.bound_ms(r);
            row["of_bound"] = r.ms > 0 ? ceil.bound_ms(r) / r.ms : 0;
        }
        out.push_back(row);
    }
    return out;
}

struct ModelRun {
    std::string name;
    dt::bench::Shape shape;
    std::vector<PresetRun> runs;
};

int run(int argc, char** argv) {
    const Options o = parse(argc, argv);
    dt::set_num_threads(o.threads);
    std::vector<ModelRun> models;
    for (const std::string& model : o.models) models.push_back({model, shape_of(model), {}});
    // The ceiling before and after the steps, the higher of the two: a busy moment lowers one.
    std::map<int, double> peak;
    for (int b : {128, 256, 512}) peak[b] = dt::bench::fma_peak_gflops(b, o.threads);
    const double gbps = dt::bench::read_bandwidth_gbps(o.threads);
    for (ModelRun& m : models) {
        for (const std::string& p : o.presets) {
            std::fprintf(stderr, "dt_roofline: %s %s ...\n", m.name.c_str(), p.c_str());
            m.runs.push_back(run_preset(m.shape, p, o.steps));
        }
    }
    for (int b : {128, 256, 512})
        peak[b] = std::max(peak[b], dt::bench::fma_peak_gflops(b, o.threads));
    const int bits = dt::cpu_isa() == dt::CpuIsa::kAvx512 ? 512
                     : dt::cpu_isa() == dt::CpuIsa::kAvx2 ? 256
                                                          : 128;
    const Ceilings ceil{peak[bits], std::max(gbps, dt::bench::read_bandwidth_gbps(o.threads))};
    std::printf(
        "Ceilings at %d threads, measured before and after the steps (the higher): FMA 128-bit "
        "%s, 256-bit %s, 512-bit %s GFLOP/s; the kernels run %s, so the FMA ceiling is %s "
        "GFLOP/s. Memory read %s GB/s. A layer's bound is its work at the FMA ceiling or its "
        "operands read once at the memory ceiling, the longer.\n",
        o.threads, fixed(peak[128], 1).c_str(), fixed(peak[256], 1).c_str(),
        fixed(peak[512], 1).c_str(), dt::cpu_isa_name(dt::cpu_isa()), fixed(ceil.gflops, 1).c_str(),
        fixed(ceil.gbps, 1).c_str());
    Json doc = {
        {"threads", o.threads},
        {"isa", dt::cpu_isa_name(dt::cpu_isa())},
        {"ceiling_gflops",
         {{"128", peak[128]}, {"256", peak[256]}, {"512", peak[512]}, {"used", ceil.gflops}}},
        {"read_gbps", ceil.gbps},
        {"models", Json::array()}};
    for (const ModelRun& m : models) {
        print_model(m.name, m.shape, o, m.runs, ceil);
        Json presets = Json::object();
        for (std::size_t p = 0; p < m.runs.size(); ++p)
            presets[o.presets[p]] = {{"step_ms", m.runs[p].step_ms},
                                     {"layers", rows_json(m.runs[p].layers, ceil)},
                                     {"kernels", rows_json(m.runs[p].kernels, ceil)}};
        doc["models"].push_back(
            {{"model", m.name}, {"batch", m.shape.batch}, {"presets", presets}});
    }
    if (!o.json.empty()) {
        std::ofstream f(o.json);
        f << doc.dump(1) << "\n";
        if (!f) throw std::runtime_error("cannot write " + o.json);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "dt_roofline: error: %s\n", e.what());
        return 1;
    }
}
