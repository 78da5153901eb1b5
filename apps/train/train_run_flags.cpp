// SPDX-License-Identifier: MIT
// The flags of `detrain train` that say how and where a run goes, not what it computes
// (RunOptions): threads, instruction set, device, micro-batches, progress, output, checkpoints,
// stopping and resuming. Validation: validate_train_config (train_config.cpp).
#include <CLI/CLI.hpp>

#include "apps/train/train_config.h"

namespace dt {

void add_run_option_flags(CLI::App& app, RunOptions& cfg) {
    app.add_option("--threads", cfg.threads,
                   "CPU threads (results do not depend on it, except under atomic accumulation)")
        ->capture_default_str();
    app.add_option("--isa", cfg.isa,
                   "Instruction set of the CPU kernels: the GEMM and convolution kernels, the "
                       "Adam update, the non-finite scan, linear's wgrad leaves and the exact row "
                       "sums (detrain info lists them)" +
                       flag_choices(isa_names()) +
                       "; auto = $DT_ISA if set, else the best this CPU has. Results do not "
                       "depend on it")
        ->capture_default_str();
    app.add_option("--device", cfg.device,
                   "Where the tensors live and the kernels run" + flag_choices(device_names()) +
                       ". cuda needs a CUDA build and an NVIDIA GPU (docs/gpu.md); under the "
                       "deterministic modes the weights do not depend on it")
        ->capture_default_str();
    app.add_option("--micro-batch", cfg.micro_batch,
                   "Split every batch into micro-batches of at most M samples (per process) and "
                   "accumulate their gradients: the memory of M, the update of the whole batch. "
                   "Under --impl exact the weights equal whole batches bit for bit (batch norm "
                   "then normalises each micro-batch on its own); 0 = whole batches")
        ->capture_default_str();
    app.add_option("--sync-bn", cfg.sync_bn,
                   "Batch norm under mpirun -np P: on = statistics over the whole batch (every "
                   "process's part; with --impl exact the single-process bits), off = each "
                   "process normalises its own part (bits depend on P)" +
                       flag_choices({"on", "off"}))
        ->capture_default_str();
    app.add_option("--overlap", cfg.overlap,
                   "Gradients under mpirun -np P: on = sent to the other processes in buckets "
                   "while the backward pass runs, off = all at once after it (to measure what "
                   "overlap saves), auto = on where the sending thread has a core of its own: "
                   "on a GPU, or with --threads below this process's share of the cores. The "
                   "weights do not depend on it" +
                       flag_choices({"auto", "on", "off"}))
        ->capture_default_str();
    app.add_option("--bucket-elements", cfg.bucket_elements,
                   "Gradient elements per bucket of --overlap on: smaller buckets start sending "
                   "sooner, larger ones make fewer messages. The weights do not depend on it")
        ->capture_default_str();
    app.add_option("--progress", cfg.progress,
                   "Progress output" + flag_choices(progress_names()) +
                       "; auto = live bar on a terminal, plain lines otherwise")
        ->capture_default_str();
    app.add_option("--out", cfg.out, "Output directory (default: runs/<model>-<dataset>)");
    app.add_option("--replay", cfg.replay,
                   "Re-run the configuration recorded in a result.json, random seeds as drawn; "
                   "only --out, --progress, --threads, --isa, --device, --micro-batch, "
                   "--sync-bn, --overlap, --bucket-elements, --data-dir, --checkpoint-every, "
                   "--stop-after may be given "
                   "with it "
                   "(default --out: <its directory>-replay)");
    app.add_option("--checkpoint-every", cfg.checkpoint_every,
                   "Write --out/checkpoint.safetensors every N training steps (atomically: the "
                   "previous one stays valid until the new one is complete); 0 = never")
        ->capture_default_str();
    app.add_option("--stop-after", cfg.stop_after,
                   "End this invocation after global step N with a checkpoint in --out (whatever "
                   "--checkpoint-every says), without result.json; --resume DIR continues the run "
                   "(on any device or thread count: for time-limited job slots, or to move a run). "
                   "N at or past the run's end: the run finishes; 0 = never")
        ->type_name("N");
    app.add_option("--trace", cfg.trace,
                   "Write the hash of every op output, gradient and weight of every step to FILE "
                   "(JSON lines), for detrain audit --traces A B (docs/audit.md)")
        ->type_name("FILE");
    app.add_option("--resume", cfg.resume,
                   "Continue the run checkpointed in DIR (its --out), with its configuration; "
                   "other flags must repeat the run's values (or --force), except --threads, "
                   "--isa, --device, --micro-batch, --sync-bn, --progress, --data-dir, "
                   "--checkpoint-every, --stop-after, and the number of processes. With no "
                   "checkpoint in DIR yet (a run killed before its first), starts the run of "
                   "DIR's run_plan.json from the beginning, so --resume DIR alone always "
                   "restarts a run; without a plan either, the run's flags given again start "
                   "it there. A DIR holding no run, or a finished run and no checkpoint, is "
                   "refused")
        ->type_name("DIR");
    app.add_flag("--force", cfg.force,
                 "With --resume: continue even where the given flags differ from the run's");
}

}  // namespace dt
