#include "engine/issue_sites.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "engine/mode.h"

namespace torch_tpu::engine {
namespace {

std::atomic<IssueSiteReader> g_reader{nullptr};
thread_local const char* t_site_override = nullptr;

std::atomic<bool>& record_slot() {
  static std::atomic<bool> enabled{[] {
    const char* value = std::getenv("TORCH_TPU_RECORD_PYTHON_LINES");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }()};
  return enabled;
}

}  // namespace

void set_issue_site_reader(IssueSiteReader reader) { g_reader.store(reader); }

bool record_python_lines_enabled() { return record_slot().load(std::memory_order_relaxed); }
void set_record_python_lines(bool enabled) { record_slot().store(enabled); }

const char* current_issue_site() {
  if (!record_python_lines_enabled() && !current_policy().always_records_issue_sites()) return nullptr;
  if (t_site_override != nullptr) return t_site_override;
  const IssueSiteReader reader = g_reader.load(std::memory_order_acquire);
  return reader != nullptr ? reader() : nullptr;
}

bool issue_sites_recorded() {
  return record_python_lines_enabled() || current_policy().always_records_issue_sites();
}

void set_issue_site_override(const char* site) { t_site_override = site; }

}  // namespace torch_tpu::engine
