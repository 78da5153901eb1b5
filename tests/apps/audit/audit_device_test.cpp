// SPDX-License-Identifier: MIT
// `detrain audit` on a device, checked without a GPU on the stand-in cuda device
// (tests/support/fake_cuda.h: the CPU's kernels behind memory that faults on host access):
// - a trail made on the device names every entry as the cpu's does (the parameters too), so the
//   cpu and the stand-in, whose bits agree, give trails without any difference (the GPU check's
//   `audit --vs "--device cuda"` reads a difference there as the devices parting ways);
// - the guarantee matrix of a device run has the columns rerun, permuted rows and the same run
//   on the cpu (no thread or instruction-set columns, which change no device kernel); every
//   deterministic mode is stable under a rerun and equal to the cpu at every site, and the
//   evaluation row runs the model where it is.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "apps/audit/audit_compare.h"
#include "apps/audit/audit_matrix.h"
#include "apps/audit/audit_runs.h"
#include "tests/support/fake_cuda.h"
#include "tests/support/train_runs.h"

namespace dt {
namespace {

class AuditOnADevice : public test::TrainingRuns {
 protected:
    AuditOnADevice() : TrainingRuns(64, 16) {}
    std::vector<std::string> flags(const std::string& model) const {
        return {"--data-dir",   dir_ / "data", "--model",           model,
                "--batch-size", "32",          "--eval-batch-size", "16"};
    }
};

TEST_F(AuditOnADevice, TheCpuAndTheDeviceGiveTheSameTrail) {
    const test::ScopedFakeCuda device;
    std::vector<std::string> a = flags("smallcnn-bn");
    for (const char* w : {"--impl", "exact-all", "--dropout", "0.2"}) a.push_back(w);
    std::vector<std::string> b = a;
    b.insert(b.end(), {"--device", "cuda"});
    const auto [cfg_a, cfg_b] = audit_configs(a, b, 2);
    const Trail ta = run_traced(cfg_a), tb = run_traced(cfg_b);
    EXPECT_EQ(tb.result.device, "cuda");
    const AuditResult r = compare_trails(ta.entries, tb.entries);
    EXPECT_FALSE(r.first.has_value()) << r.first->a.op << " " << r.first->a.tensor << " vs "
                                      << r.first->b.op << " " << r.first->b.tensor;
    EXPECT_GT(r.weights_total, 0);
    bool named = false;  // the device run's weight gradients carry the parameters' names
    for (const autograd::TraceEntry& e : tb.entries) named |= e.tensor == "grad conv1.weight";
    EXPECT_TRUE(named);
}

TEST_F(AuditOnADevice, TheMatrixComparesTheDeviceWithItselfAndWithTheCpu) {
    const test::ScopedFakeCuda device;
    std::vector<std::string> f = flags("smallcnn");
    f.insert(f.end(), {"--device", "cuda"});
    const AuditMatrix m = run_audit_matrix(f, 1, [](const std::string&) {});
    EXPECT_EQ(m.columns, (std::vector<std::string>{"rerun", "permuted rows", "cpu"}));
    ASSERT_EQ(m.rows.size(), 7u * 5u + 1u);  // smallcnn's seven sites x five modes, evaluation
    for (const MatrixRow& r : m.rows) {
        ASSERT_EQ(r.cells.size(), 3u);
        for (std::size_t c = 0; c < 3; ++c) {
            SCOPED_TRACE(r.site + " " + r.mode + " " + m.columns[c]);
            EXPECT_GT(r.cells[c].compared, 0);
            if (r.mode != "atomic" && (c != 1 || r.mode == "exact" || r.site == "evaluation")) {
                EXPECT_TRUE(r.cells[c].stable());
            }
        }
    }
    EXPECT_GT(test::ScopedFakeCuda::kernel_calls(), 1000u);  // the runs were on the device
}

}  // namespace
}  // namespace dt
