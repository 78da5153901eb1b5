// SPDX-License-Identifier: MIT
// Runs the replicas of a study as child processes (`detrain train ...`), up to --jobs at once.
// Why processes: a replica that crashes or is killed takes nothing else with it, each replica's
// outputs are written atomically by `train` itself (result.json last), and --jobs needs no
// thread-safety from the engine (the reduce-site registry is process-global).
//
// Resume rule: a replica is finished iff DIR/result.json exists (train writes it last, by
// rename). Finished replicas are never rerun; an unfinished replica's directory is emptied and
// the replica starts over. Children get SIGKILL when the study process dies (PR_SET_PDEATHSIG),
// so a killed study leaves no orphan writing into its directory.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace dt::study {

struct ReplicaJob {
    std::string label;              // "algo #3", for messages
    std::string dir;                // the replica's --out
    std::vector<std::string> args;  // argv after the executable ("train", ..., "--out", dir)
};

struct ReplicaDone {
    const ReplicaJob* job = nullptr;
    bool reused = false;  // finished by an earlier (interrupted) run of the study
    double seconds = 0;   // wall time of the child (0 when reused)
};

/// True when `dir` holds a finished replica (result.json present).
bool replica_finished(const std::string& dir);

/// The detrain executable that trains replicas: the running one (/proc/self/exe), unless
/// set_replica_executable named another (a host process such as Python's).
std::string self_executable();
/// Names the executable self_executable returns from now on ("" = the running one again).
void set_replica_executable(const std::string& path);

/// Runs every unfinished job (at most `jobs` at once, in list order) with `exe`; a child's
/// stdout and stderr go to <dir>.log. `on_done` is called (from this thread) for every job,
/// reused ones first. When a child fails, the others are killed and dt::Error is thrown naming
/// the replica, its exit status, its log and the log's last lines.
void run_replicas(const std::vector<ReplicaJob>& list, int jobs, const std::string& exe,
                  const std::function<void(const ReplicaDone&)>& on_done);

/// Holds an exclusive lock on DIR/.study.lock for its lifetime; throws dt::Error when another
/// study is running in DIR.
class StudyLock {
 public:
    explicit StudyLock(const std::string& dir);
    ~StudyLock();
    StudyLock(const StudyLock&) = delete;
    StudyLock& operator=(const StudyLock&) = delete;

 private:
    int fd_ = -1;
};

}  // namespace dt::study
