// SPDX-License-Identifier: MIT
// Model weights as safetensors files: every NamedParam (trainable tensors and batch-norm running
// statistics) under its PyTorch-style name, in canonical order, float32. Loading matches by name,
// checks that the file holds exactly the model's parameters with the same shapes and dtype, and
// only then copies the values in place (so optimizer handles stay valid).
#pragma once
#include <string>

#include "engine/io/safetensors.h"
#include "models/model.h"

namespace dt {

/// All of model.params() in canonical order, as (name, tensor) pairs: the tensors themselves
/// (sharing storage) for a model on the cpu, copies on the cpu for a model elsewhere.
io::NamedTensors model_named_tensors(const Model& model);

/// Writes model_named_tensors(model) and `metadata` to `path` atomically (see save_safetensors).
void save_model_safetensors(const Model& model, const std::string& path,
                            const io::Metadata& metadata = {});

/// Copies the tensors of `file` into the model. Throws IoError for a missing or unexpected
/// tensor or a dtype other than F32, ShapeError for a shape mismatch; each message names the
/// parameter, the expected and the found value, and `what` (the file). Nothing is copied unless
/// every check passes.
void load_model_params(Model& model, const io::SafetensorsFile& file, const std::string& what);
/// The checks of load_model_params alone: nothing is copied.
void check_model_params(const Model& model, const io::SafetensorsFile& file,
                        const std::string& what);

/// load_safetensors(path) + load_model_params; returns the file's metadata.
io::Metadata load_model_safetensors(Model& model, const std::string& path);

}  // namespace dt
