// Reads where the user's Python code issued an op (engine/issue_sites.h) and binds
// torch_tpu.set_record_python_lines.
#include <Python.h>
#include <frameobject.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "engine/issue_sites.h"

namespace torch_tpu::python {
namespace {

namespace py = pybind11;

// Source files that are not the user's code (torch's and torch_tpu's own modules), and
// exceptions inside them (torch_tpu's demo, example code a user runs). Set at import; written
// and read only with the GIL held.
struct LibraryPaths {
  std::vector<std::string> library;
  std::vector<std::string> user;
};
LibraryPaths g_paths;

bool starts_with(const char* text, const std::string& prefix) {
  return std::strncmp(text, prefix.data(), prefix.size()) == 0;
}

bool is_library_file(const char* file) {
  for (const std::string& user : g_paths.user) {
    if (starts_with(file, user)) return false;
  }
  for (const std::string& library : g_paths.library) {
    if (starts_with(file, library)) return true;
  }
  return false;
}

// Interned "file:line in function": a program stream repeats a few hundred lines.
const char* intern(std::string site) {
  static std::mutex mutex;
  static std::unordered_set<std::string> sites;
  std::lock_guard<std::mutex> lock(mutex);
  return sites.insert(std::move(site)).first->c_str();
}

// The innermost frame of the calling thread's Python stack that is user code, or (when every
// frame is library code) the innermost one. Takes the GIL: ops are issued with it released.
const char* read_issue_site() {
  // A thread that never ran Python (autograd's device threads) has no frame to read, and
  // taking the GIL there would only cost a thread state. Nor is there one to read while the
  // interpreter shuts down (ops issued from atexit handlers or C++ destructors); Python 3.11
  // names that check _Py_IsFinalizing.
  if (PyGILState_GetThisThreadState() == nullptr || _Py_IsFinalizing()) return nullptr;
  const PyGILState_STATE gil = PyGILState_Ensure();
  const char* site = nullptr;
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  PyFrameObject* innermost = frame;
  Py_XINCREF(innermost);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    const bool user = file != nullptr && !is_library_file(file);
    Py_DECREF(code);
    if (user) break;
    PyFrameObject* back = PyFrame_GetBack(frame);
    Py_DECREF(frame);
    frame = back;
  }
  PyFrameObject* chosen = frame != nullptr ? frame : innermost;
  if (chosen != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(chosen);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    const char* function = PyUnicode_AsUTF8(code->co_name);
    if (file != nullptr && function != nullptr) {
      site = intern(std::string(file) + ":" + std::to_string(PyFrame_GetLineNumber(chosen)) +
                    " in " + function);
    }
    Py_DECREF(code);
  }
  if (PyErr_Occurred()) PyErr_Clear();  // a failed UTF-8 conversion names no site
  Py_XDECREF(frame);
  Py_XDECREF(innermost);
  PyGILState_Release(gil);
  return site;
}

}  // namespace

void init_python_lines(py::module_& m) {
  engine::set_issue_site_reader(&read_issue_site);
  m.def("_record_python_lines_enabled", &engine::record_python_lines_enabled);
  m.def("_set_record_python_lines", &engine::set_record_python_lines);
  m.def("_issue_sites_recorded", &engine::issue_sites_recorded);
  // A compiled graph's node's source line ("file.py:12 in forward"), or None to read the stack.
  m.def("_set_issue_site", [](const std::optional<std::string>& site) {
    engine::set_issue_site_override(site ? intern(*site) : nullptr);
  });
  // The innermost of (file, line, function) frames, outermost first, that is user code (or
  // the innermost frame when none is), as "file.py:12 in forward"; None for no frames.
  m.def("_user_issue_site",
        [](const std::vector<std::tuple<std::string, int, std::string>>& frames)
            -> std::optional<std::string> {
          if (frames.empty()) return std::nullopt;
          auto chosen = frames.rbegin();
          for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame) {
            if (!is_library_file(std::get<0>(*frame).c_str())) {
              chosen = frame;
              break;
            }
          }
          return std::get<0>(*chosen) + ":" + std::to_string(std::get<1>(*chosen)) + " in " +
                 std::get<2>(*chosen);
        });
  m.def("_set_library_paths",
        [](std::vector<std::string> library, std::vector<std::string> user) {
          g_paths = LibraryPaths{std::move(library), std::move(user)};
        });
}

}  // namespace torch_tpu::python
