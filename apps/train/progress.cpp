// SPDX-License-Identifier: MIT
// Progress output of `detrain train` (see progress.h for the three modes).
#include "apps/train/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "apps/train/train_config.h"
#include "engine/core/error.h"
#include "engine/core/text.h"
#include "engine/runtime/cuda_device.h"
#include "engine/runtime/isa.h"

namespace dt {

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kBarRedrawSeconds = 0.1;  // at most ~10 redraws a second
constexpr int kBarWidth = 24;

double seconds_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

std::string schedule_text(const TrainConfig& c) {
    if (c.schedule == "step") return str("step (x", c.gamma, " every ", c.step_epochs, " epochs)");
    if (c.schedule == "cosine") {
        return str("cosine (warm-up ", c.warmup_epochs, " epochs, min-lr ", c.min_lr, ")");
    }
    return c.schedule;
}

std::string optimizer_text(const TrainConfig& c) {
    std::string s = str(c.optimizer, ", lr ", c.lr, ", weight-decay ", c.weight_decay);
    if (c.clip_grad_norm > 0) s += str(", clip-grad-norm ", c.clip_grad_norm);
    if (c.optimizer == "sgd") s += str(", momentum ", c.momentum, c.nesterov ? " (nesterov)" : "");
    return s;
}

}  // namespace

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    const long s = std::lround(seconds);
    char buf[32];
    if (s >= 3600) {
        std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
    } else if (s >= 60) {
        std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
    } else {
        std::snprintf(buf, sizeof buf, "%lds", s);
    }
    return buf;
}

Progress::Mode Progress::parse_mode(const std::string& name, std::FILE* out) {
    if (name == "bar") return Mode::kBar;
    if (name == "plain") return Mode::kPlain;
    if (name == "none") return Mode::kNone;
    DT_CHECK_VALUE(name == "auto", "--progress: got '", name, "', expected auto|bar|plain|none");
    return isatty(fileno(out)) ? Mode::kBar : Mode::kPlain;
}

namespace {
/// "cpu", or "cuda: " and what the device is (name, compute capability, memory, ...).
std::string device_text(const TrainConfig& c) {
    return c.device == "cpu" ? c.device : c.device + ": " + cuda_device::describe();
}
}  // namespace

void Progress::start(const TrainConfig& c, const RunInfo& info) {
    epochs_ = c.epochs;
    steps_per_epoch_ = info.steps_per_epoch;
    run_start_ = last_draw_ = Clock::now();
    if (mode_ == Mode::kNone) return;
    const bool text = c.dataset == "text";
    const long long n_train = info.train_size, n_test = info.test_size;
    const std::string model =
        text ? str(c.model, " (", info.num_parameters, " parameters), ", c.layers, " layers, ",
                   c.heads, " heads, width ", c.width, ", context ", c.context, ", init ", c.init)
             : str(c.model, " (", info.num_parameters, " parameters), init ", c.init, ", dropout ",
                   c.dropout, ", kernel-size ", c.kernel_size);
    const std::string data = text ? str("text from ", c.data_dir, ": ", n_train, " train / ",
                                        n_test, " validation windows of ", c.context + 1, " bytes")
                                  : str(c.dataset, " from ", c.data_dir, ": ", n_train, " train / ",
                                        n_test, " test, ", info.channels, "x", info.height, "x",
                                        info.width, ", ", info.num_classes, " classes");
    std::fprintf(out_,
                 "detrain train\n"
                 "  model      %s\n"
                 "  data       %s\n"
                 "             normalize %s, augment %s (crop-padding %d), shuffle %s, "
                 "limit-train %lld, limit-test %lld%s%s\n"
                 "  training   %d epoch(s) x %lld steps, batch %d, eval batch %d\n"
                 "  optimizer  %s\n"
                 "  schedule   %s\n"
                 "  threads    %d, isa %s\n"
                 "  device     %s\n"
                 "  out        %s\n",
                 model.c_str(), data.c_str(), c.normalize.c_str(),
                 c.augment_on() ? c.augment.c_str() : "none", c.crop_padding,
                 c.shuffle_on() ? "on" : "off", static_cast<long long>(c.limit_train),
                 static_cast<long long>(c.limit_test), c.imbalance.empty() ? "" : ", imbalance ",
                 c.imbalance.c_str(), c.epochs, static_cast<long long>(info.steps_per_epoch),
                 c.batch_size, c.eval_batch_size, optimizer_text(c).c_str(),
                 schedule_text(c).c_str(), c.threads, cpu_isa_name(cpu_isa()),
                 device_text(c).c_str(), c.out.c_str());
    if (!info.allreduce.empty())
        std::fprintf(out_, "  processes  %d, allreduce %s\n", info.processes,
                     info.allreduce.c_str());
    std::fprintf(out_, "  noise      (every switch in effect; docs/noise.md)\n");
    for (const std::string& line : describe_noise(c.noise)) {
        std::fprintf(out_, "    %s\n", line.c_str());
    }
    if (!info.init_perturb.empty()) {
        std::fprintf(out_, "    perturbed       %s\n", info.init_perturb.c_str());
    }
    if (c.dropout > 0 && !c.dropout_on()) {
        std::fprintf(out_, "    note            --dropout %g has no effect: dropout is off\n",
                     c.dropout);
    }
    if (c.augment != "none" && !c.augment_on()) {
        std::fprintf(out_, "    note            --augment %s has no effect: augment is off\n",
                     c.augment.c_str());
    }
    std::fflush(out_);
}

void Progress::step(int epoch, int64_t step, double mean_loss, double images_per_second) {
    if (mode_ == Mode::kNone || steps_per_epoch_ <= 0) return;
    const double fraction = static_cast<double>(step) / static_cast<double>(steps_per_epoch_);
    if (mode_ == Mode::kPlain) {
        // One line per crossed tenth of the epoch, except the last (epoch_end reports that).
        const int64_t decile = step * 10 / steps_per_epoch_;
        if (step == steps_per_epoch_ || decile == last_plain_decile_ || decile == 0) return;
        last_plain_decile_ = decile;
        std::fprintf(out_, "epoch %d/%d  step %lld/%lld (%3.0f%%)  loss %.4f  %.0f img/s\n", epoch,
                     epochs_, static_cast<long long>(step),
                     static_cast<long long>(steps_per_epoch_), 100.0 * fraction, mean_loss,
                     images_per_second);
        std::fflush(out_);
        return;
    }
    const Clock::time_point now = Clock::now();
    if (step != steps_per_epoch_ && bar_visible_ &&
        seconds_between(last_draw_, now) < kBarRedrawSeconds) {
        return;
    }
    last_draw_ = now;
    const int64_t done = static_cast<int64_t>(epoch - 1) * steps_per_epoch_ + step;
    const int64_t total = static_cast<int64_t>(epochs_) * steps_per_epoch_;
    const double eta = seconds_between(run_start_, now) / static_cast<double>(done) *
                       static_cast<double>(total - done);
    char bar[kBarWidth + 1];
    const int filled = std::clamp(static_cast<int>(fraction * kBarWidth), 0, kBarWidth);
    for (int i = 0; i < kBarWidth; ++i) bar[i] = i < filled ? '#' : '.';
    bar[kBarWidth] = '\0';
    std::fprintf(out_, "\r\033[Kepoch %d/%d [%s] %3.0f%%  loss %.4f  %.0f img/s  ETA %s", epoch,
                 epochs_, bar, 100.0 * fraction, mean_loss, images_per_second,
                 format_duration(eta).c_str());
    std::fflush(out_);
    bar_visible_ = true;
}

void Progress::evaluating(int epoch) {
    if (mode_ != Mode::kBar) return;
    std::fprintf(out_, "\r\033[Kepoch %d/%d  evaluating on the test split...", epoch, epochs_);
    std::fflush(out_);
    bar_visible_ = true;
}

void Progress::epoch_end(const EpochStats& s) {
    last_plain_decile_ = -1;
    if (mode_ == Mode::kNone) return;
    clear_bar();
    const double elapsed = seconds_between(run_start_, Clock::now());
    const double eta = elapsed / s.epoch * (epochs_ - s.epoch);
    const std::string eta_text = s.epoch < epochs_ ? "  ETA " + format_duration(eta) : "";
    if (std::isfinite(s.bits_per_byte)) {  // a language model: per validation token
        std::fprintf(out_,
                     "epoch %d/%d  train loss %.4f  val loss %.4f  %.3f bits/byte  next-byte "
                     "accuracy %.2f%%  %.1f s  %.1f seq/s%s\n",
                     s.epoch, epochs_, s.train_loss, s.validation_loss, s.bits_per_byte,
                     100.0 * s.test_accuracy, s.seconds, s.images_per_second, eta_text.c_str());
    } else {
        std::fprintf(out_,
                     "epoch %d/%d  train loss %.4f  test accuracy %.2f%%  %.1f s  %.0f img/s%s\n",
                     s.epoch, epochs_, s.train_loss, 100.0 * s.test_accuracy, s.seconds,
                     s.images_per_second, eta_text.c_str());
    }
    std::fflush(out_);
}

void Progress::note(const std::string& line) {
    if (mode_ == Mode::kNone) return;
    clear_bar();
    std::fprintf(out_, "%s\n", line.c_str());
    std::fflush(out_);
}

void Progress::notice(const std::string& line) {
    clear_bar();
    std::fprintf(out_, "%s\n", line.c_str());
    std::fflush(out_);
}

void Progress::clear_bar() {
    if (!bar_visible_) return;
    std::fprintf(out_, "\r\033[K");
    bar_visible_ = false;
}

}  // namespace dt
