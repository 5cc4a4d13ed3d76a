// The saved-tensor hooks of fused mode's rematerialization (ops/saved_recipes.h):
// _pack_saved and _unpack_saved are installed as autograd's default hooks as they are, with no
// Python frame in between (python/torch_tpu/_saved_recipes.py).
#include <torch/csrc/utils/pybind.h>

#include "ops/saved_recipes.h"

namespace torch_tpu::python {

namespace py = pybind11;

void init_saved_recipes(py::module_& m) {
  py::class_<ops::SavedRecipe, std::shared_ptr<ops::SavedRecipe>>(
      m, "_SavedRecipe");
  m.def("_set_saved_recipes_enabled", &ops::set_saved_recipes_enabled);
  m.def("_pack_saved", [](const at::Tensor& saved) -> py::object {
    ops::KeptForBackward kept = ops::keep_for_backward(saved);
    if (kept.recipe == nullptr) return py::cast(std::move(kept.tensor));
    return py::cast(std::const_pointer_cast<ops::SavedRecipe>(kept.recipe));
  });
  m.def("_unpack_saved", [](const py::object& packed) -> at::Tensor {
    if (py::isinstance<ops::SavedRecipe>(packed)) {
      return ops::recompute(packed.cast<const ops::SavedRecipe&>());
    }
    return packed.cast<at::Tensor>();
  });
  m.def("_saved_recipe_stats", [] {
    const ops::SavedRecipeStats stats = ops::saved_recipe_stats();
    py::dict result;
    result["recipes"] = stats.recipes;
    result["recomputed"] = stats.recomputed;
    return result;
  });
}

}  // namespace torch_tpu::python
