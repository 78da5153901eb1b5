// SPDX-License-Identifier: MIT
// detrain._detrain: the engine in-process for the Python package (python/detrain). It runs the
// command line's own table (apps/cli.h), so names, defaults and validation are the CLI's. The
// engine's process-wide state (reduce sites, ISA, MPI) allows one call at a time: a second
// concurrent call is refused. The GIL is released while a call runs.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "apps/cli.h"
#include "engine/autograd/tape.h"
#include "engine/core/error.h"

namespace nb = nanobind;

namespace {

std::mutex g_busy;

/// Runs argv in-process; returns (exit status, the run's directory after a `train`).
std::tuple<int, std::string> run(const std::vector<std::string>& argv) {
    std::unique_lock<std::mutex> lock(g_busy, std::try_to_lock);
    if (!lock.owns_lock())
        throw std::runtime_error(
            "another detrain call is running in this process; the engine runs one at a time "
            "(hint: start parallel runs in separate processes)");
    std::string out;
    int status = 0;
    {
        nb::gil_scoped_release release;
        status = dt::run_cli(argv, &out);
    }
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
    // Translators run newest first: the specific exceptions are registered after the general.
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const dt::IoError& e) {
            PyErr_SetString(PyExc_OSError, e.what());
        } catch (const dt::ValueError& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        }
    });
    static nb::exception<dt::UsageError> usage(m, "UsageError", PyExc_ValueError);
    static nb::exception<dt::autograd::NonFiniteGradient> non_finite(m, "NonFiniteError",
                                                                     PyExc_ArithmeticError);
    m.def("run", &run, nb::arg("argv"),
          "Runs a detrain command line in-process: (exit status, run directory).");
    m.def("set_executable", &dt::set_detrain_executable, nb::arg("path"),
          "The detrain executable that a study starts for its replicas.");
    m.def("flags", &flags, nb::arg("subcommand"),
          "The flags of a subcommand: (name, default, help, takes_value, repeatable) each.");
}
