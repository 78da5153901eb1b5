// SPDX-License-Identifier: MIT
// detrain._detrain: the engine in-process for the Python package (python/detrain). It runs the
// command line's own table (apps/cli.h), so names, defaults and validation are the CLI's. The
// engine's process-wide state (reduce sites, ISA, MPI) allows one call at a time: a second
// concurrent call is refused. The GIL is released while a call runs.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "apps/cli.h"
#include "apps/train/train_hooks.h"
#include "apps/train/trainer_noise.h"
#include "engine/autograd/tape.h"
#include "engine/core/error.h"
#include "python/src/ops.h"

namespace nb = nanobind;

namespace {

std::mutex g_busy;

/// What the hooks of a run caught: a Python exception (Ctrl-C's KeyboardInterrupt, or one a
/// callback raised) ends the run at the step with a checkpoint and is raised when it returns.
struct Caught {
    std::optional<nb::python_error> error;
};

/// The train hooks of one call: Ctrl-C checked after every step, the callbacks called with a
/// dict. Each takes the GIL (the run released it).
dt::TrainHooks hooks_for(nb::object on_step, nb::object on_epoch, Caught& caught) {
    dt::TrainHooks h;
    h.on_step = [on_step, &caught](const dt::StepEvent& e) {
        nb::gil_scoped_acquire gil;
        try {
            if (PyErr_CheckSignals() != 0) throw nb::python_error();
            if (!on_step.is_none()) {
                nb::dict d;
                d["epoch"] = e.epoch;
                d["step"] = e.step;
                d["total_steps"] = e.total_steps;
                d["mean_loss"] = e.mean_loss;
                d["images_per_second"] = e.images_per_second;
                return nb::cast<bool>(nb::bool_(on_step(d)));
            }
        } catch (nb::python_error& err) {
            caught.error.emplace(std::move(err));
            return true;
        }
        return false;
    };
    h.on_epoch = [on_epoch, &caught](const dt::EpochStats& s) {
        if (on_epoch.is_none() || caught.error) return;
        nb::gil_scoped_acquire gil;
        nb::dict d;
        d["epoch"] = s.epoch;
        d["train_loss"] = s.train_loss;
        d["test_accuracy"] = s.test_accuracy;
        d["seconds"] = s.seconds;
        d["train_seconds"] = s.train_seconds;
        d["images_per_second"] = s.images_per_second;
        if (!std::isnan(s.validation_loss)) {
            d["validation_loss"] = s.validation_loss;
            d["bits_per_byte"] = s.bits_per_byte;
        }
        try {
            on_epoch(d);
        } catch (nb::python_error& err) {
            caught.error.emplace(std::move(err));
        }
    };
    return h;
}

/// Runs argv in-process; returns (exit status, the run's or study's directory, whether a hook
/// stopped the run early). A caught Python exception is raised after the run's checkpoint.
std::tuple<int, std::string> run(const std::vector<std::string>& argv, nb::object on_step,
                                 nb::object on_epoch) {
    std::unique_lock<std::mutex> lock(g_busy, std::try_to_lock);
    if (!lock.owns_lock())
        throw std::runtime_error(
            "another detrain call is running in this process; the engine runs one at a time "
            "(hint: start parallel runs in separate processes)");
    std::string out;
    int status = 0;
    Caught caught;
    dt::set_train_hooks(hooks_for(on_step, on_epoch, caught));
    struct Unset {
        ~Unset() { dt::set_train_hooks({}); }
    } unset;
    {
        nb::gil_scoped_release release;
        status = dt::run_cli(argv, &out);
    }
    if (caught.error) caught.error->restore(), throw nb::python_error();
    return {status, out};
}

/// The flags of a subcommand: (name, default, help, takes a value, repeatable) each.
std::vector<std::tuple<std::string, std::string, std::string, bool, bool>> flags(
    const std::string& subcommand) {
    std::vector<std::tuple<std::string, std::string, std::string, bool, bool>> out;
    for (const dt::FlagInfo& f : dt::cli_flags(subcommand))
        out.emplace_back(f.name, f.default_value, f.help, f.takes_value, f.repeatable);
    return out;
}

}  // namespace

NB_MODULE(_detrain, m) {
    m.doc() = "detrain's engine, in-process (use the detrain package, not this module)";
    static nb::exception<dt::UsageError> usage(m, "UsageError", PyExc_ValueError);
    static nb::exception<dt::autograd::NonFiniteGradient> non_finite(m, "NonFiniteError",
                                                                     PyExc_ArithmeticError);
    // Translators run newest first: this one sees every dt::Error, the subclasses first.
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const dt::UsageError& e) {
            PyErr_SetString(usage.ptr(), e.what());
        } catch (const dt::TrainingDiverged& e) {  // a NaN or infinity: step, op and tensor
            PyErr_SetString(non_finite.ptr(), e.what());
        } catch (const dt::IoError& e) {
            PyErr_SetString(PyExc_OSError, e.what());
        } catch (const dt::ValueError& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const dt::ShapeError& e) {  // an argument of the wrong shape
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const dt::DTypeError& e) {
            PyErr_SetString(PyExc_TypeError, e.what());
        }
    });
    m.def("run", &run, nb::arg("argv"), nb::arg("on_step") = nb::none(),
          nb::arg("on_epoch") = nb::none(),
          "Runs a detrain command line in-process: (exit status, run directory). on_step(dict)"
          " after every training step (True stops the run with a checkpoint), on_epoch(dict)"
          " after every epoch; Ctrl-C stops it with a checkpoint, then raises.");
    nb::module_ ops = m.def_submodule("ops", "engine ops on NumPy arrays (python/src/ops.cpp)");
    dt::python::bind_ops(ops);
    m.def("set_executable", &dt::set_detrain_executable, nb::arg("path"),
          "The detrain executable that a study starts for its replicas.");
    m.def("flags", &flags, nb::arg("subcommand"),
          "The flags of a subcommand: (name, default, help, takes_value, repeatable) each.");
}
