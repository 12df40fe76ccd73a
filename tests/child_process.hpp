#pragma once

// Child processes for tests whose parent runs threads (the mock cluster's brokers). A child made
// by fork() alone starts with copies of the locks those threads held at that instant (the
// sanitizer's allocator, librdkafka's) and can wait on one forever; a child here is this same
// executable started afresh with posix_spawn, and enters its work before main().
//
//   KEYROUTE_TEST_CHILD(name, fn);    // at namespace scope (a header may hold it), once per name
//   pid_t pid = keyroute_test::spawn_child("name", {"arg", ...});
//   int status = keyroute_test::wait_child(pid, std::chrono::seconds(60));
//
// fn is `int(const std::vector<std::string>& args)`; the child exits with its result.

#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace keyroute_test {

/// The environment variable that names the child to run.
inline constexpr const char* child_variable = "KEYROUTE_TEST_CHILD";

/// Starts this executable again as the child registered under `name`, with `args`; its pid.
/// Throws std::runtime_error when the process cannot be started.
inline auto spawn_child(const std::string& name, const std::vector<std::string>& args) -> pid_t {
    std::vector<std::string> env{std::string(child_variable) + "=" + name};
    for (char** e = environ; *e != nullptr; ++e) {
        if (std::strncmp(*e, child_variable, std::strlen(child_variable)) != 0)
            env.emplace_back(*e);
    }
    std::vector<std::string> argv{"/proc/self/exe"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto pointers = [](std::vector<std::string>& v) {
        std::vector<char*> p;
        for (auto& s : v) p.push_back(s.data());
        p.push_back(nullptr);
        return p;
    };
    auto argv_p = pointers(argv);
    auto env_p = pointers(env);
    std::fflush(nullptr);
    pid_t pid = 0;
    const int rc =
        posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv_p.data(), env_p.data());
    if (rc != 0) throw std::runtime_error("posix_spawn: " + std::string(std::strerror(rc)));
    return pid;
}

/// Waits for child `pid` to end, at most `timeout`; its wait status, or -1 when it was still
/// running (it is then killed and reaped, so that a hung child fails a test instead of hanging it).
inline auto wait_child(pid_t pid, std::chrono::milliseconds timeout) -> int {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
        if (waitpid(pid, &status, WNOHANG) == pid) return status;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/// In a process started by spawn_child(name, ...): runs `fn` with the arguments and exits with
/// its result, before main(). Elsewhere returns false and does nothing.
template <typename Fn>
auto child_entry(const char* name, Fn fn) -> bool {
    const char* which = std::getenv(child_variable);
    if (which == nullptr || std::strcmp(which, name) != 0) return false;
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> args;  // cmdline: every argument ends with a '\0'
    for (std::size_t begin = 0, end = 0; (end = all.find('\0', begin)) != std::string::npos;
         begin = end + 1) {
        args.push_back(all.substr(begin, end - begin));
    }
    if (!args.empty()) args.erase(args.begin());  // argv[0]
    const int status = fn(args);
    std::fflush(nullptr);
    std::_Exit(status);  // no destructors of statics this process never finished constructing
}

}  // namespace keyroute_test

/// Registers `fn` as child `name` (an identifier) of this executable.
#define KEYROUTE_TEST_CHILD(name, fn)                               \
    [[maybe_unused]] inline const bool keyroute_test_child_##name = \
        keyroute_test::child_entry(#name, fn)
