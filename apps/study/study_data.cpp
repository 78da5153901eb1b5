// SPDX-License-Identifier: MIT
// Loading replicas (contract in study_data.h).
#include "apps/study/study_data.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/train/train_config.h"
#include "engine/core/error.h"
#include "engine/io/safetensors.h"
#include "models/model.h"

namespace fs = std::filesystem;

namespace dt::study {

namespace {

std::string read_all(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw IoError(str("cannot read ", p.string(), ": missing or unreadable"));
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// predictions.csv: "index,label,predicted" rows in index order.
void read_predictions(const fs::path& p, ReplicaData& d) {
    std::istringstream in(read_all(p));
    std::string line;
    std::getline(in, line);
    if (line != "index,label,predicted") {
        throw IoError(str(p.string(), ": line 1 is '", line, "', expected index,label,predicted"));
    }
    long long row = 0;
    while (std::getline(in, line)) {
        long long index = 0, label = 0, pred = 0;
        char c1 = 0, c2 = 0;
        std::istringstream f(line);
        if (!(f >> index >> c1 >> label >> c2 >> pred) || c1 != ',' || c2 != ',' || index != row) {
            throw IoError(str(p.string(), ": line ", row + 2, " is '", line, "', expected ", row,
                              ",LABEL,PREDICTED"));
        }
        d.labels.push_back(static_cast<int32_t>(label));
        d.predictions.push_back(pred);
        ++row;
    }
}

/// Row-wise softmax of the logits (max-shifted, in double), as float.
std::vector<float> softmax_rows(const Tensor& logits) {
    const int64_t n = logits.shape()[0], k = logits.shape()[1];
    const float* x = logits.data<float>();
    std::vector<float> p(static_cast<std::size_t>(n * k));
    for (int64_t i = 0; i < n; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < k; ++j) mx = std::max(mx, static_cast<double>(x[i * k + j]));
        double sum = 0;  // ORDER: classes ascending, in double
        for (int64_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(x[i * k + j]) - mx);
        for (int64_t j = 0; j < k; ++j) {
            p[static_cast<std::size_t>(i * k + j)] =
                static_cast<float>(std::exp(static_cast<double>(x[i * k + j]) - mx) / sum);
        }
    }
    return p;
}

/// Names of the trainable tensors of the model `result` describes, canonical order.
std::vector<std::string> trainable_names(const nlohmann::json& result) {
    const nlohmann::json& ds = result.at("dataset");
    const DatasetGeometry g{ds.at("image_shape").at(0).get<int>(),
                            ds.at("image_shape").at(1).get<int>(),
                            ds.at("image_shape").at(2).get<int>(), ds.at("num_classes").get<int>()};
    const std::unique_ptr<Model> model =
        make_model(model_config(train_config_from_json(result.at("config")), g));
    std::vector<std::string> names;
    for (const NamedParam& p : model->params()) {
        if (p.trainable) names.push_back(p.name);
    }
    return names;
}

}  // namespace

LoadedReplica load_replica(const std::string& dir, const std::string& variant, int index) {
    const fs::path d(dir);
    LoadedReplica r;
    r.data.variant = variant;
    r.data.index = index;
    const fs::path result_path = d / "result.json";
    try {
        r.result = nlohmann::json::parse(read_all(result_path));
        r.data.accuracy = r.result.at("test_accuracy").get<double>();
        r.num_classes = r.result.at("dataset").at("num_classes").get<int>();
        const nlohmann::json& h = r.result.at("history");
        if (!h.empty() && h.back().contains("validation_loss"))
            r.data.validation_loss = h.back().at("validation_loss").get<double>();
    } catch (const nlohmann::json::exception& e) {
        throw IoError(str(result_path.string(), ": not a detrain result.json (", e.what(), ")"));
    }
    read_predictions(d / "predictions.csv", r.data);

    const io::SafetensorsFile logits =
        io::load_safetensors((d / "test_logits.safetensors").string());
    const Tensor* l = logits.find("logits");
    if (l == nullptr || l->ndim() != 2 || l->shape()[1] != r.num_classes ||
        l->shape()[0] != static_cast<int64_t>(r.data.labels.size())) {
        throw IoError(str((d / "test_logits.safetensors").string(),
                          ": expected a tensor 'logits' of ", r.data.labels.size(), " x ",
                          r.num_classes));
    }
    r.data.probabilities = softmax_rows(*l);

    const io::SafetensorsFile w = io::load_safetensors((d / "weights.safetensors").string());
    std::vector<std::string> names;
    try {
        names = trainable_names(r.result);
    } catch (const nlohmann::json::exception& e) {
        throw IoError(str(result_path.string(), ": incomplete configuration (", e.what(), ")"));
    }
    for (const std::string& name : names) {
        const Tensor* t = w.find(name);
        if (t == nullptr) {
            throw IoError(str((d / "weights.safetensors").string(), ": no tensor '", name,
                              "', which the recorded model has"));
        }
        const float* p = t->data<float>();
        r.data.weights.insert(r.data.weights.end(), p, p + t->numel());
    }
    return r;
}

}  // namespace dt::study
