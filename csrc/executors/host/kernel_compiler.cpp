#include "executors/host/kernel_compiler.h"

#include <dlfcn.h>
#include <pthread.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <vector>

extern char** environ;

namespace torch_tpu::executors::host {
namespace {

namespace fs = std::filesystem;

// No fast-math: generated kernels must give the interpreter's numbers bit for bit. Contraction
// off for the same reason (the interpreter spells out its one fma).
const char* const kFlags[] = {"-O3", "-march=native", "-ffp-contract=off", "-fno-math-errno",
                              "-fPIC", "-shared", "-std=c++17", "-w"};

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

std::string compiler() {
  return env_or("TORCH_TPU_KERNEL_COMPILER", env_or("CXX", "c++"));
}

fs::path cache_dir() {
  const char* explicit_dir = std::getenv("TORCH_TPU_KERNEL_CACHE_DIR");
  if (explicit_dir != nullptr && *explicit_dir != '\0') return explicit_dir;
  const std::string home = env_or("HOME", "/tmp");
  return fs::path(env_or("XDG_CACHE_HOME", home + "/.cache")) / "torch_tpu" / "kernels";
}

// The CPU a -march=native kernel was built for: a cache shared between machines must not hand
// one CPU's kernel to another.
std::string cpu_identity() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, identity;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0) identity += line + "\n";
    if (line.empty() && !identity.empty()) break;
  }
  return identity;
}

uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

// Runs `argv`, its output to `log`; true if it exited 0.
bool run_command(const std::vector<std::string>& argv, const fs::path& log) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

class KernelCompiler {
 public:
  static KernelCompiler& instance() {
    // Never destroyed: the worker may still be compiling when the process exits.
    static KernelCompiler* compiler = [] {
      auto* created = new KernelCompiler;
      // A forked child has no compile thread: it starts its own when it needs one, and
      // compiles that were in flight count as failed there (never waited for forever).
      pthread_atfork([] { instance().mutex_.lock(); }, [] { instance().mutex_.unlock(); },
                     [] { instance().reset_in_child(); });
      return created;
    }();
    return *compiler;
  }

  std::shared_ptr<const CompiledKernel> request(const std::string& source, const std::string& symbol) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto [found, added] = kernels_.try_emplace(source + '\0' + symbol);
    if (!added) return found->second;
    found->second = std::make_shared<CompiledKernel>();
    jobs_.push_back({source, symbol, found->second});
    ++pending_;
    if (!worker_started_) {
      std::thread([this] { work(); }).detach();
      worker_started_ = true;
    }
    work_cv_.notify_one();
    return found->second;
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_cv_.wait(lock, [&] { return pending_ == 0; });
  }

  KernelCompileStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  // In a forked child (mutex_ held since the fork's prepare handler).
  void reset_in_child() {
    for (auto it = kernels_.begin(); it != kernels_.end();) {
      if (it->second->done()) {
        ++it;
        continue;
      }
      it->second->done_.store(true, std::memory_order_release);
      it = kernels_.erase(it);
    }
    jobs_.clear();
    pending_ = 0;
    worker_started_ = false;
    mutex_.unlock();
  }

 private:
  struct Job {
    std::string source;
    std::string symbol;
    std::shared_ptr<CompiledKernel> kernel;
  };

  void work() {
    const std::string identity = compiler() + "\n" + cpu_identity();
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        work_cv_.wait(lock, [&] { return !jobs_.empty(); });
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      void* symbol = build(job, identity);
      job.kernel->symbol_.store(symbol, std::memory_order_release);
      job.kernel->done_.store(true, std::memory_order_release);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        --pending_;
      }
      idle_cv_.notify_all();
    }
  }

  void* build(const Job& job, const std::string& identity) {
    std::ostringstream key;
    key << job.source << '\n' << identity;
    for (const char* flag : kFlags) key << flag << ' ';
    char name[32];
    std::snprintf(name, sizeof(name), "%016llx", static_cast<unsigned long long>(fnv1a(key.str())));
    const fs::path dir = cache_dir();
    const fs::path library = dir / (std::string(name) + ".so");
    std::error_code error;
    bool cached = fs::exists(library, error);
    if (!cached) {
      fs::create_directories(dir, error);
      // Private names until the rename: processes compiling the same kernel do not collide.
      const std::string unique = std::string(name) + "." + std::to_string(getpid());
      const fs::path source = dir / (unique + ".cpp");
      const fs::path built = dir / (unique + ".so");
      const fs::path log = dir / (std::string(name) + ".log");
      std::ofstream(source) << job.source;
      std::vector<std::string> argv{compiler()};
      argv.insert(argv.end(), std::begin(kFlags), std::end(kFlags));
      argv.insert(argv.end(), {source.string(), "-o", built.string()});
      const bool ok = run_command(argv, log);
      if (ok) {
        fs::rename(built, library, error);
        fs::rename(source, dir / (std::string(name) + ".cpp"), error);  // kept for reading
        fs::remove(log, error);
      } else {
        fs::remove(source, error);
        fs::remove(built, error);
        return failed("the compiler failed (" + compiler() + "; see " + log.string() + ")");
      }
    }
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return failed(std::string("cannot load ") + library.string() + ": " + dlerror());
    void* symbol = dlsym(handle, job.symbol.c_str());
    if (symbol == nullptr) return failed("no symbol " + job.symbol + " in " + library.string());
    std::lock_guard<std::mutex> lock(mutex_);
    ++(cached ? stats_.loaded_from_cache : stats_.compiled);
    return symbol;
  }

  void* failed(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stats_.failed++ == 0) {
      std::fprintf(stderr, "torch_tpu: could not compile a fused kernel, running it interpreted: %s\n",
                   why.c_str());
    }
    return nullptr;
  }

  std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<Job> jobs_;
  std::unordered_map<std::string, std::shared_ptr<CompiledKernel>> kernels_;
  int64_t pending_ = 0;
  bool worker_started_ = false;
  KernelCompileStats stats_;
};

std::shared_ptr<const CompiledKernel> compile_kernel(const std::string& source,
                                                     const std::string& symbol) {
  return KernelCompiler::instance().request(source, symbol);
}

void wait_for_kernel_compiles() { KernelCompiler::instance().wait(); }

KernelCompileStats kernel_compile_stats() { return KernelCompiler::instance().stats(); }

}  // namespace torch_tpu::executors::host
