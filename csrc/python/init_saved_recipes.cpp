// The saved-tensor hooks of fused mode's rematerialization (privateuse1/saved_recipes.h):
// _pack_saved and _unpack_saved are installed as autograd's default hooks as they are, with no
// Python frame in between (python/torch_tpu/_saved_recipes.py).
#include <torch/csrc/utils/pybind.h>

#include "privateuse1/saved_recipes.h"

namespace torch_tpu::python {

namespace py = pybind11;

void init_saved_recipes(py::module_& m) {
  py::class_<privateuse1::SavedRecipe, std::shared_ptr<privateuse1::SavedRecipe>>(
      m, "_SavedRecipe");
  m.def("_set_saved_recipes_enabled", &privateuse1::set_saved_recipes_enabled);
  m.def("_pack_saved", [](const at::Tensor& saved) -> py::object {
    privateuse1::KeptForBackward kept = privateuse1::keep_for_backward(saved);
    if (kept.recipe == nullptr) return py::cast(std::move(kept.tensor));
    return py::cast(std::const_pointer_cast<privateuse1::SavedRecipe>(kept.recipe));
  });
  m.def("_unpack_saved", [](const py::object& packed) -> at::Tensor {
    if (py::isinstance<privateuse1::SavedRecipe>(packed)) {
      return privateuse1::recompute(packed.cast<const privateuse1::SavedRecipe&>());
    }
    return packed.cast<at::Tensor>();
  });
  m.def("_saved_recipe_stats", [] {
    const privateuse1::SavedRecipeStats stats = privateuse1::saved_recipe_stats();
    py::dict result;
    result["recipes"] = stats.recipes;
    result["recomputed"] = stats.recomputed;
    return result;
  });
}

}  // namespace torch_tpu::python
