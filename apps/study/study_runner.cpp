// SPDX-License-Identifier: MIT
// Child processes for study replicas (contract in study_runner.h).
#include "apps/study/study_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>

#include "engine/core/error.h"

namespace fs = std::filesystem;

namespace dt::study {

namespace {

using Clock = std::chrono::steady_clock;

/// The last `n` lines of a text file ("" if unreadable).
std::string tail_lines(const std::string& path, int n) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::string out;
    const std::size_t from = lines.size() > static_cast<std::size_t>(n) ? lines.size() - n : 0;
    for (std::size_t i = from; i < lines.size(); ++i) out += "    " + lines[i] + "\n";
    return out;
}

std::string status_text(int status) {
    if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("signal ") + strsignal(WTERMSIG(status));
    return "status " + std::to_string(status);
}

/// fork + exec of `exe args`, output to `log`. The child dies with its parent.
pid_t spawn(const std::string& exe, const std::vector<std::string>& args, const std::string& log) {
    std::vector<char*> argv;  // built before fork: the child only calls async-signal-safe functions
    argv.push_back(const_cast<char*>(exe.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    // The child's environment without the launcher's (OMPI_*, PMIX_*, PMI_*): a replica spawned
    // by a rank of `mpirun detrain study` trains as one process of its own.
    std::vector<char*> envp;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view v(*e);
        if (v.starts_with("OMPI_") || v.starts_with("PMIX_") || v.starts_with("PMI_")) continue;
        envp.push_back(*e);
    }
    envp.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) throw IoError(str("cannot start a replica process: fork: ", std::strerror(errno)));
    if (pid > 0) return pid;
    // Child.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
    }
    execve(exe.c_str(), argv.data(), envp.data());
    _exit(127);
}

struct Running {
    const ReplicaJob* job;
    Clock::time_point start;
};

void kill_all(std::map<pid_t, Running>& running) {
    for (const auto& [pid, r] : running) kill(pid, SIGKILL);
    for (const auto& [pid, r] : running) waitpid(pid, nullptr, 0);
    running.clear();
}

}  // namespace

bool replica_finished(const std::string& dir) { return fs::exists(fs::path(dir) / "result.json"); }

namespace {
std::string& replica_executable() {
    static std::string path;
    return path;
}
}  // namespace

void set_replica_executable(const std::string& path) { replica_executable() = path; }

std::string self_executable() {
    if (!replica_executable().empty()) return replica_executable();
    std::error_code ec;
    const fs::path p = fs::read_symlink("/proc/self/exe", ec);
    if (ec) throw IoError("cannot find the detrain executable (/proc/self/exe): " + ec.message());
    return p.string();
}

void run_replicas(const std::vector<ReplicaJob>& list, int jobs, const std::string& exe,
                  const std::function<void(const ReplicaDone&)>& on_done) {
    std::vector<const ReplicaJob*> todo;
    for (const ReplicaJob& j : list) {
        if (replica_finished(j.dir)) {
            on_done(ReplicaDone{&j, true, 0});
        } else {
            todo.push_back(&j);
        }
    }
    std::map<pid_t, Running> running;
    std::size_t next = 0;
    while (next < todo.size() || !running.empty()) {
        while (next < todo.size() && static_cast<int>(running.size()) < std::max(1, jobs)) {
            const ReplicaJob* j = todo[next++];
            std::error_code ec;
            fs::remove_all(j->dir, ec);  // leftovers of an interrupted attempt
            fs::create_directories(fs::path(j->dir).parent_path(), ec);
            try {
                running[spawn(exe, j->args, j->dir + ".log")] = Running{j, Clock::now()};
            } catch (...) {
                kill_all(running);
                throw;
            }
        }
        int status = 0;
        const pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            const std::string why = std::strerror(errno);
            kill_all(running);
            throw IoError("waiting for replica processes failed: " + why);
        }
        const auto it = running.find(pid);
        if (it == running.end()) continue;  // not ours
        const Running r = it->second;
        running.erase(it);
        const double seconds = std::chrono::duration<double>(Clock::now() - r.start).count();
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) || !replica_finished(r.job->dir)) {
            kill_all(running);
            throw Error(str("replica ", r.job->label, " failed (", status_text(status),
                            "); its log ", r.job->dir, ".log ends with:\n",
                            tail_lines(r.job->dir + ".log", 8),
                            "Fix the cause and rerun the same command: finished replicas are "
                            "kept."));
        }
        on_done(ReplicaDone{r.job, false, seconds});
    }
}

StudyLock::StudyLock(const std::string& dir) {
    const std::string path = (fs::path(dir) / ".study.lock").string();
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw IoError(str("cannot create ", path, ": ", std::strerror(errno)));
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        close(fd_);
        fd_ = -1;
        throw Error(str("another `detrain study` is running in ", dir,
                        " (it holds .study.lock); wait for it or use another --out"));
    }
}

StudyLock::~StudyLock() {
    if (fd_ >= 0) close(fd_);  // closing releases the lock
}

}  // namespace dt::study
