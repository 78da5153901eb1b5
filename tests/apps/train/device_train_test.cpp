// SPDX-License-Identifier: MIT
// Training on a device other than the cpu, checked without a GPU: run_training with --device
// cuda under a stand-in cuda device (tests/support/fake_cuda.h: the CPU's kernels, memory that
// faults on any host access outside a kernel or a copy). What this proves is the plumbing of the
// trainer: parameters, optimizer state, batches and labels live on the device; logits, losses,
// hashes, weights and checkpoints come back through copies; and the bits equal the cpu run's,
// also for a checkpoint written on one device and resumed on the other. The CUDA kernels
// themselves are checked on a GPU (tests/kernels/cuda/, scripts/gpu_check.sh).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "apps/train/checkpoint.h"
#include "apps/train/progress.h"
#include "apps/train/run_outputs.h"
#include "apps/train/train_resume.h"
#include "apps/train/trainer.h"
#include "apps/train/trainer_noise.h"
#include "engine/runtime/cuda_device.h"
#include "tests/support/fake_cuda.h"
#include "tests/support/synthetic_idx.h"
#include "tests/support/synthetic_text.h"
#include "tests/support/temp_dir.h"
#include "tests/support/train_args.h"
#include "tests/support/train_runs.h"

namespace dt {
namespace {

using test::Crash;
using test::expect_same_run;
using test::train_run;

class DeviceTraining : public test::TrainingRuns {
 protected:
    DeviceTraining() : TrainingRuns(128, 48) {}

    /// The TrainConfig of these flags (validated on the cpu), then set to run on `device`.
    TrainConfig config(const std::string& out, const std::string& extra,
                       const std::string& device) const {
        TrainConfig c = test::parse_train(run_flags(out, 20, extra));
        c.device = device;
        return c;
    }
};

TEST_F(DeviceTraining, HostAccessToDeviceMemoryFaults) {
    // The guard the other tests rely on: touching a device tensor's data from the host crashes.
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            const test::ScopedFakeCuda device;
            Tensor t = Tensor::zeros({4}, DType::kF32, Device::kCuda);
            t.f32()[1] = 1.0f;
        },
        "");
    const test::ScopedFakeCuda device;
    Tensor t = Tensor::full({4}, 2.0f, Device::kCuda);  // through a copy: fine
    EXPECT_EQ(t.to_vector(), std::vector<float>(4, 2.0f));
}

TEST_F(DeviceTraining, ARunOnTheDeviceGivesTheCpuBits) {
    // Batch-norm (buffers), dropout (mask and sample ids on the device), AdamW, augmentation on
    // the host, checkpoints written from device tensors, the weights initialised and one of them
    // perturbed on the device.
    const std::string flags =
        "--model smallcnn-bn --dropout 0.3 --optimizer adamw --augment crop+flip "
        "--checkpoint-every 3 --impl deterministic --init-perturb conv1.weight:5:up";
    const TrainResult cpu = train_run(config("cpu", flags, "cpu"));
    const test::ScopedFakeCuda device;
    const TrainResult dev = train_run(config("dev", flags, "cuda"));
    EXPECT_EQ(dev.device, "cuda");
    EXPECT_EQ(dev.model->device(), Device::kCuda);
    EXPECT_GT(test::ScopedFakeCuda::kernel_calls(), 100u);
    expect_same_run(cpu, dev);
    // The device memory the run held at its peak: at least the parameters, their gradients and
    // AdamW's two moments; reported for a device only.
    EXPECT_EQ(cpu.device_peak_bytes, -1);
    EXPECT_GE(dev.device_peak_bytes, 4 * 4 * dev.num_parameters);
    EXPECT_FALSE(result_json(config("cpu", flags, "cpu"), cpu, {}).contains("device_peak_bytes"));
    EXPECT_EQ(result_json(config("dev", flags, "cuda"), dev, {})["device_peak_bytes"],
              dev.device_peak_bytes);
}

TEST_F(DeviceTraining, ACheckpointResumesOnTheOtherDevice) {
    const std::string flags =
        "--model smallcnn --optimizer sgd --momentum 0.9 --checkpoint-every 3";
    const TrainResult whole = train_run(config("whole", flags, "cpu"));
    for (const char* first : {"cpu", "cuda"}) {
        SCOPED_TRACE(first);
        const std::string second = std::string(first) == "cpu" ? "cuda" : "cpu";
        const std::string out = std::string("from-") + first;
        {
            const test::ScopedFakeCuda device;
            EXPECT_THROW(train_run(config(out, flags, first), 5), Crash);
        }
        const Checkpoint ck = read_checkpoint(dir_ / out);
        const test::ScopedFakeCuda device;
        TrainConfig again = config(out, flags, second);
        expect_same_run(whole, train_run(again, 0, &ck));
    }
}

TEST_F(DeviceTraining, ARunStoppedOnOneDeviceEndsOnTheOther) {
    // --stop-after, as the GPU check moves its run: the checkpoint written at the stop from one
    // device's tensors and read into the other's, dropout masks included, gives the cpu's run.
    const std::string flags = "--model smallcnn --dropout 0.3 --impl deterministic";
    const TrainResult whole = train_run(config("whole", flags, "cpu"));
    for (const std::string first : {"cpu", "cuda"}) {
        SCOPED_TRACE(first);
        const std::string out = "stopped-on-" + first;
        const test::ScopedFakeCuda device;
        TrainConfig stopping = config(out, flags, first);
        stopping.stop_after = 5;  // of 8: inside the second epoch
        EXPECT_EQ(train_run(stopping).stopped_after, 5);
        const Checkpoint ck = read_checkpoint(dir_ / out);
        EXPECT_EQ(ck.position.global_step, 5);
        expect_same_run(whole,
                        train_run(config(out, flags, first == "cpu" ? "cuda" : "cpu"), 0, &ck));
    }
}

TEST_F(DeviceTraining, MicroBatchesOnTheDeviceGiveTheWholeBatchCpuBits) {
    // A split batch on the device: the exact sites add to accumulators on the device, the
    // split completes gradients and loss through the host and hands the gradients back; the
    // loss's per-sample rows and total come back through copies. Batch norm with one micro-batch
    // per batch: one part, exact_dbeta/dgamma on the device.
    for (const char* flags : {"--model smallcnn --impl exact --dropout 0.3 --micro-batch 8",
                              "--model smallcnn-bn --impl exact-all --micro-batch 32"}) {
        SCOPED_TRACE(flags);
        std::string whole_flags = flags;
        whole_flags = whole_flags.substr(0, whole_flags.find(" --micro-batch"));
        const TrainResult cpu = train_run(config("cpu", whole_flags, "cpu"));
        const test::ScopedFakeCuda device;
        const TrainResult dev = train_run(config("dev", flags, "cuda"));
        EXPECT_EQ(dev.device, "cuda");
        expect_same_run(cpu, dev);
    }
}

TEST_F(DeviceTraining, GptOnTheDeviceGivesTheCpuBits) {
    // Token ids and per-token targets, the embedding's scatter, layer norm, attention and the
    // tied head on the device; whole batches under tree, and exact micro-batches (the table's
    // two accumulator sets on the device) against the cpu's whole batches.
    const std::string text = test::write_synthetic_text(dir_ / "text.txt", 12000, 5);
    const std::string gpt = " --model gpt --data-file " + text +
                            " --layers 2 --heads 2 --width 16 --context 16 --limit-train 64 "
                            "--limit-test 8 --batch-size 16 --eval-batch-size 8";
    for (const char* mode : {" --impl deterministic", " --impl exact"}) {
        SCOPED_TRACE(mode);
        const TrainResult cpu = train_run(config("cpu", gpt + mode, "cpu"));
        const test::ScopedFakeCuda device;
        const TrainResult dev = train_run(config("dev", gpt + mode, "cuda"));
        expect_same_run(cpu, dev);
        EXPECT_TRUE(std::isfinite(dev.history.back().bits_per_byte));
        EXPECT_EQ(dev.history.back().bits_per_byte, cpu.history.back().bits_per_byte);
        if (std::string(mode) == " --impl exact") {
            const TrainResult micro =
                train_run(config("micro", gpt + mode + " --micro-batch 5", "cuda"));
            expect_same_run(cpu, micro);
        }
    }
}

/// Records, at every training step, how many copies to and from the device there were so far.
class CopyCountingProgress : public Progress {
 public:
    CopyCountingProgress() : Progress(Mode::kNone) {}
    void step(int, int64_t, double, double) override {
        to_host.push_back(test::ScopedFakeCuda::copies_to_host());
        from_host.push_back(test::ScopedFakeCuda::copies_from_host());
        reads_later.push_back(test::ScopedFakeCuda::reads_later());
    }
    std::vector<std::size_t> to_host, from_host, reads_later;
};

TEST_F(DeviceTraining, AStepWaitsForTheDeviceOnce) {
    // A copy to the host waits for the device; uploads do not (kernels/cuda/upload.cu), nor do
    // kernels (the non-finite scan writes its answers into device memory), nor a copy read later
    // (the loss: PendingItem, taken after a wait covered it). A whole-batch step copies once to
    // the host, the answers of the tape's finite check of every gradient at the end of the
    // backward (it was one wait per gradient, one for the trainer's scan and one for the loss
    // before the backward), and reads its loss later. Its uploads: the images, the labels, the
    // sample ids of the dropout masks and the backward's seed gradient.
    const std::string flags =
        "--model smallcnn-bn --dropout 0.3 --optimizer adamw --impl deterministic";
    const test::ScopedFakeCuda device;
    CopyCountingProgress progress;
    run_training(config("dev", flags, "cuda"), progress);
    const std::size_t steps_per_epoch = 128 / 32;
    ASSERT_EQ(progress.to_host.size(), 2 * steps_per_epoch);
    for (std::size_t s = 1; s < steps_per_epoch; ++s) {  // the first epoch's steps after its first
        SCOPED_TRACE(s);
        EXPECT_EQ(progress.to_host[s] - progress.to_host[s - 1], 1u);
        EXPECT_EQ(progress.from_host[s] - progress.from_host[s - 1], 4u);
        EXPECT_EQ(progress.reads_later[s] - progress.reads_later[s - 1], 1u);
    }
}

TEST_F(DeviceTraining, TheStartBannerNamesTheDevice) {
    // "cuda: " and what the device is (on the stand-in: what is missing for a real one).
    const test::ScopedFakeCuda device;
    std::FILE* out = std::tmpfile();
    ASSERT_NE(out, nullptr);
    Progress progress(Progress::Mode::kPlain, out);
    run_training(config("banner", "--model smallcnn --epochs 1", "cuda"), progress);
    std::rewind(out);
    std::string text(8192, '\0');
    text.resize(std::fread(text.data(), 1, text.size(), out));
    std::fclose(out);
    EXPECT_NE(text.find("\n  device     cuda: " + cuda_device::describe() + "\n"),
              std::string::npos)
        << text;
}

TEST_F(DeviceTraining, ADivergedLossIsReportedAsOnTheCpu) {
    // The loss is taken after the backward on every device; a non-finite one still ends the run
    // as the loss's divergence, at the same step, with the same message as the cpu's.
    const std::string flags = "--model smallcnn --optimizer sgd --momentum 0 --lr 1e4";
    std::string messages[2];
    for (int k = 0; k < 2; ++k) {
        const test::ScopedFakeCuda device;
        try {
            train_run(config("nan", flags, k == 0 ? "cpu" : "cuda"));
            ADD_FAILURE() << "training did not diverge";
        } catch (const TrainingDiverged& e) {
            messages[k] = e.what();
        }
    }
    EXPECT_NE(messages[0].find("training diverged: the loss (op softmax_cross_entropy) is"),
              std::string::npos)
        << messages[0];
    EXPECT_EQ(messages[1], messages[0]);
}

}  // namespace
}  // namespace dt
