// Where the host issued each op: the user's Python file and line. Recorded when asked (and
// always in Debug mode), so that an error raised later at a sync point names the line as well
// as the op (Strict runs ops asynchronously, fused mode records them and runs them as
// programs), and program dumps show where each recorded op came from. The Python module
// installs the function that reads the calling thread's Python stack, so engine code stays
// free of Python.
#pragma once

namespace torch_tpu::engine {

// Returns where the calling thread's Python code issued the op now being issued, as an
// interned string ("train.py:12 in step"), or null (no Python frame on this thread).
using IssueSiteReader = const char* (*)();
void set_issue_site_reader(IssueSiteReader reader);

// Whether Strict and fused mode record where each op was issued (Debug mode always does).
// Initialised from TORCH_TPU_RECORD_PYTHON_LINES=1. Reading the Python stack costs each op
// about half a microsecond, so it is off by default.
bool record_python_lines_enabled();
void set_record_python_lines(bool enabled);

// Where the op being issued comes from, or null when not recording (or not known).
const char* current_issue_site();

// Whether ops issued now record their issue sites (Python lines enabled, or the process's mode
// always records them).
bool issue_sites_recorded();
// Until cleared (null), the calling thread's ops are issued at `site` (interned, never freed),
// whatever its Python stack says: a torch.compile graph's op names the line of the user's code
// it was traced from, not the graph's generated code.
void set_issue_site_override(const char* site);

}  // namespace torch_tpu::engine
