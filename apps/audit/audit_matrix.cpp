// SPDX-License-Identifier: MIT
// The guarantee matrix (contract in audit_matrix.h).
#include "apps/audit/audit_matrix.h"

#include <map>
#include <optional>
#include <random>

#include "apps/audit/audit_runs.h"
#include "datasets/sampler.h"
#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/runtime/isa.h"
#include "engine/runtime/threads.h"

namespace dt {

namespace {

using autograd::TraceEntry;

constexpr uint64_t kShuffleSeed = 3;
const char* const kModes[] = {"tree", "kahan", "exact", "permuted:7", "atomic"};

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const char* p) {
    const std::string q(p);
    return s.size() >= q.size() && s.compare(s.size() - q.size(), q.size(), q) == 0;
}

/// The site whose accumulation produced (or shaped) a trail entry, if any.
std::optional<ReduceSite> entry_site(const TraceEntry& e) {
    const bool grad = starts_with(e.tensor, "grad ");
    const bool input = starts_with(e.tensor, "grad input");
    if (e.phase == "backward" && (e.op == "conv2d" || e.op == "linear" || e.op == "bias_add")) {
        if (grad && ends_with(e.tensor, ".bias")) return ReduceSite::kBiasGrad;
        if (e.op == "bias_add") return std::nullopt;  // its dx is a copy
        if (input) return e.op == "conv2d" ? ReduceSite::kConvDgrad : ReduceSite::kLinearDgrad;
        if (grad) return e.op == "conv2d" ? ReduceSite::kConvWgrad : ReduceSite::kLinearWgrad;
    }
    if (e.op == "batchnorm2d")
        return e.phase == "forward" ? ReduceSite::kBnStats : ReduceSite::kBnBackward;
    if (e.phase == "backward" &&
        (e.op == "maxpool2d" || e.op == "relu_maxpool2d" || e.op == "avgpool2d"))
        return ReduceSite::kPoolBackward;
    if (e.phase == "forward" && e.op == "softmax_cross_entropy") return ReduceSite::kLoss;
    // GPT's: the embedding's table gradients; layer norm's and attention's every entry.
    if (e.phase == "backward" && e.op == "embedding" && grad) return ReduceSite::kEmbedGrad;
    if (e.op == "layer_norm")
        return e.phase == "forward" ? ReduceSite::kLnStats : ReduceSite::kLnGrad;
    if (e.op == "causal_attention")
        return e.phase == "forward" ? ReduceSite::kAttnFwd : ReduceSite::kAttnGrad;
    if (e.op == "clip_grad_norm") return ReduceSite::kGradNorm;
    return std::nullopt;
}

/// The batch size of each step and the rows per sample of its per-token tensors (from its
/// images entry: images (N, C, H, W), one row each; a language model's tokens (N, T), T rows).
struct StepBatch {
    int64_t n = -1, rows = 1;
};
std::map<int64_t, StepBatch> batch_sizes(const std::vector<TraceEntry>& t) {
    std::map<int64_t, StepBatch> n;
    for (const TraceEntry& e : t)
        if (e.phase == "data" && e.tensor == "images" && !n.count(e.step))
            n[e.step] = {e.shape[0], e.shape.size() == 2 ? e.shape[1] : 1};
    return n;
}

/// Compares site `site`'s entries of A and B; B's batches hold A's rows permuted when
/// `permuted` (row r of B = row perm[r] of A), which per-sample tensors are mapped through.
MatrixCell compare_site(ReduceSite site, const std::vector<TraceEntry>& a,
                        const std::vector<TraceEntry>& b, bool permuted, int64_t steps_per_epoch) {
    MatrixCell c;
    const std::map<int64_t, StepBatch> n = batch_sizes(a);
    std::map<std::pair<int64_t, int64_t>, const TraceEntry*> in_b;
    for (const TraceEntry& e : b) in_b[{e.step, e.index}] = &e;
    for (const TraceEntry& e : a) {
        if (entry_site(e) != site) continue;
        ++c.compared;
        const auto it = in_b.find({e.step, e.index});
        if (it == in_b.end() || it->second->op != e.op || it->second->shape != e.shape) {
            ++c.differing;
            continue;
        }
        const TraceEntry& o = *it->second;
        const StepBatch sb = n.count(e.step) ? n.at(e.step) : StepBatch{};
        const int64_t N = sb.n;
        // Rows per sample R: a sample's rows, or a sequence's T token rows ((N*T, C) tensors).
        const int64_t R = e.shape.size() >= 2 && N > 0 && e.shape[0] == N * sb.rows ? sb.rows : 1;
        const bool per_sample = (e.tensor == "output" || starts_with(e.tensor, "grad input")) &&
                                e.shape.size() >= 2 && e.shape[0] == N * R;
        if (!permuted || !per_sample) {
            c.differing += e.hash != o.hash;
            continue;
        }
        const std::vector<int64_t> perm = within_batch_permutation(
            N, kShuffleSeed, static_cast<uint64_t>(e.step / steps_per_epoch),
            e.step % steps_per_epoch);
        bool same = e.row_hashes.size() == static_cast<std::size_t>(N * R) &&
                    o.row_hashes.size() == e.row_hashes.size();
        for (int64_t r = 0; same && r < N * R; ++r)  // row r of B: row t of sample r / R
            same = o.row_hashes[static_cast<std::size_t>(r)] ==
                   e.row_hashes[static_cast<std::size_t>(perm[static_cast<std::size_t>(r / R)] * R +
                                                         r % R)];
        c.differing += !same;
    }
    return c;
}

struct Column {
    std::string name;
    std::vector<std::string> flags;
    bool permuted = false;
};

/// The changes: on the cpu, thread counts and instruction sets among them; on a device (whose
/// kernels neither changes), the same run on the cpu instead: the device's bits against the cpu's.
std::vector<Column> columns(bool on_device) {
    const std::string permute_seed = std::to_string(kShuffleSeed);
    if (on_device)
        return {{"rerun", {}, false},
                {"permuted rows", {"--shuffle-within-batch", permute_seed}, true},
                {"cpu", {"--device", "cpu"}, false}};
    std::vector<Column> c = {{"rerun", {}, false},
                             {"threads 1", {"--threads", "1"}, false},
                             {"permuted rows", {"--shuffle-within-batch", permute_seed}, true}};
    for (CpuIsa isa : supported_cpu_isas())
        c.push_back({std::string("isa ") + cpu_isa_name(isa), {"--isa", cpu_isa_name(isa)}, false});
    return c;
}

/// Bits of sample r's rows of a (N * R, K) logits tensor (R rows per sample).
std::vector<float> rows_of(const Tensor& logits, int64_t r, int64_t R) {
    const std::vector<float> v = logits.to_vector();
    const int64_t K = logits.dim(1);
    return {v.begin() + r * R * K, v.begin() + (r + 1) * R * K};
}

/// Evaluation logits of 16 inputs of the model's shape in their batch, against the reversed
/// batch (rerun and permuted rows), half the batch (threads 1: at one thread), each ISA, and for
/// a model on a device the same batch on the cpu (the model moved there and back). A language
/// model's inputs are 16 sequences of random bytes, its T logit rows per sequence compared.
MatrixRow evaluation_row(const TrainResult& r, const std::vector<Column>& cols) {
    const int64_t N = 16, R = r.model->rows_per_sample();
    const RunInfo& info = r.info;
    std::mt19937 gen(7);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    const Shape one = R > 1 ? Shape{R} : Shape{info.channels, info.height, info.width};
    const int64_t per = shape_numel(one);
    std::vector<float> xs(static_cast<std::size_t>(N * per));
    for (float& v : xs) v = u(gen);
    autograd::NoGradGuard no_grad;
    auto eval = [&](const std::vector<int64_t>& rows) {
        Shape shape = one;
        shape.insert(shape.begin(), static_cast<int64_t>(rows.size()));
        Tensor in;
        if (R > 1) {  // bytes: u * 256, truncated
            std::vector<int64_t> tokens;
            for (int64_t i : rows)
                for (int64_t t = 0; t < per; ++t)
                    tokens.push_back(
                        static_cast<int64_t>(xs[static_cast<std::size_t>(i * per + t)] * 256.0f) %
                        256);
            in = Tensor::from_vector_i64(shape, tokens);
        } else {
            in = Tensor::empty(shape);
            for (std::size_t i = 0; i < rows.size(); ++i)
                std::copy_n(xs.data() + rows[i] * per, per,
                            in.f32() + static_cast<int64_t>(i) * per);
        }
        ForwardContext ctx;
        ctx.training = false;
        ctx.sample_ids = rows;
        return r.model->forward(in.to(r.model->device()), ctx);
    };
    std::vector<int64_t> all(N), rev(N), half(N / 2);
    for (int64_t i = 0; i < N; ++i) all[i] = i, rev[i] = N - 1 - i;
    for (int64_t i = 0; i < N / 2; ++i) half[i] = i;
    const Tensor base = eval(all);
    MatrixRow row_out{"evaluation", "logits", {}};
    const int threads = num_threads();
    const CpuIsa isa = cpu_isa();
    for (const Column& c : cols) {
        MatrixCell cell;
        Tensor got;
        std::vector<int64_t> map = all;  // row i of got is sample map[i]
        if (c.name == "permuted rows")
            got = eval(rev), map = rev;
        else if (c.name == "threads 1")
            set_num_threads(1), got = eval(half), map = half;
        else if (starts_with(c.name, "isa "))
            set_cpu_isa(cpu_isa_from_name(c.name.substr(4))), got = eval(all);
        else if (c.name == "cpu") {
            const Device device = r.model->device();
            r.model->to(Device::kCpu);
            got = eval(all);
            r.model->to(device);
        } else
            got = eval(all);
        set_num_threads(threads);
        set_cpu_isa(isa);
        for (std::size_t i = 0; i < map.size(); ++i) {
            ++cell.compared;
            cell.differing += rows_of(got, static_cast<int64_t>(i), R) != rows_of(base, map[i], R);
        }
        row_out.cells.push_back(cell);
    }
    return row_out;
}

}  // namespace

AuditMatrix run_audit_matrix(const std::vector<std::string>& flags, int64_t steps,
                             const std::function<void(const std::string&)>& note) {
    const bool on_device = audit_configs(flags, flags, steps).first.device != "cpu";
    const std::vector<Column> cols = columns(on_device);
    AuditMatrix m;
    for (const Column& c : cols) m.columns.push_back(c.name);
    std::optional<TrainResult> any;
    for (ReduceSite site : all_reduce_sites()) {
        if (site == ReduceSite::kGradAllreduce) continue;  // one process
        for (const char* mode : kModes) {
            // The other sites exact: nothing but this site can move bits under the changes.
            std::vector<std::string> base = flags;
            for (const char* w : {"--impl", "exact-all", "--threads", "2", "--impl-site"})
                base.push_back(w);
            base.push_back(std::string(reduce_site_name(site)) + "=" + mode);
            note(std::string(reduce_site_name(site)) + " " + mode);
            const TrailOptions rows{.row_hashes = true};
            Trail a = run_traced(audit_configs(base, base, steps).first, rows);
            MatrixRow row{reduce_site_name(site), mode, {}};
            bool present = true;
            for (const Column& c : cols) {
                std::vector<std::string> bf = base;
                bf.insert(bf.end(), c.flags.begin(), c.flags.end());
                const Trail b = run_traced(audit_configs(base, bf, steps).second, rows);
                row.cells.push_back(compare_site(site, a.entries, b.entries, c.permuted,
                                                 a.result.info.steps_per_epoch));
                present = row.cells.back().compared > 0;
                if (!present) break;  // the model has no such site
            }
            if (present) m.rows.push_back(row);
            if (!any) any = std::move(a.result);
        }
    }
    note("evaluation");
    if (any) m.rows.push_back(evaluation_row(*any, cols));
    return m;
}

nlohmann::json matrix_json(const AuditMatrix& m) {
    nlohmann::json rows = nlohmann::json::array();
    for (const MatrixRow& r : m.rows) {
        nlohmann::json cells = nlohmann::json::object();
        for (std::size_t i = 0; i < r.cells.size(); ++i)
            cells[m.columns[i]] = {{"stable", r.cells[i].stable()},
                                   {"compared", r.cells[i].compared},
                                   {"differing", r.cells[i].differing}};
        rows.push_back({{"site", r.site}, {"mode", r.mode}, {"changes", cells}});
    }
    return {{"columns", m.columns}, {"rows", rows}};
}

void print_matrix(std::FILE* out, const AuditMatrix& m) {
    std::fprintf(out, "%-14s %-11s", "site", "mode");
    for (const std::string& c : m.columns) std::fprintf(out, " %-13s", c.c_str());
    std::fprintf(out, "\n");
    std::string last;
    for (const MatrixRow& r : m.rows) {
        std::fprintf(out, "%-14s %-11s", r.site == last ? "" : r.site.c_str(), r.mode.c_str());
        last = r.site;
        for (const MatrixCell& c : r.cells)
            std::fprintf(out, " %-13s", c.stable() ? "stable" : "DIFFERS");
        std::fprintf(out, "\n");
    }
    std::fprintf(out,
                 "stable: every compared tensor of the site kept its bits (per-sample "
                 "tensors row by row through the permutation); the other sites ran exact\n");
}

}  // namespace dt
