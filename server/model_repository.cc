#include "server/model_repository.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "kernels/io/model_loader.h"

namespace gmmscore {
namespace {

absl::Status WithPath(const absl::Status& status, const std::string& path) {
  return absl::Status(status.code(), absl::StrFormat("%s: %s", path, status.message()));
}

}  // namespace

ModelRepository::ModelRepository(std::vector<ServedModel> models, std::string device)
    : models_(std::move(models)), device_(std::move(device)) {}

absl::StatusOr<std::unique_ptr<ModelRepository>> ModelRepository::Create(
    std::vector<ServedModel> models, ScoringBackend* backend) {
  if (models.empty()) return absl::InvalidArgumentError("no models to serve");
  std::sort(models.begin(), models.end(),
            [](const ServedModel& a, const ServedModel& b) { return a.name < b.name; });
  for (size_t i = 0; i < models.size(); ++i) {
    if (models[i].name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("model from %s has an empty name", models[i].source));
    }
    if (i > 0 && models[i].name == models[i - 1].name) {
      return absl::InvalidArgumentError(
          absl::StrFormat("two models are named '%s' (%s and %s); names must be unique",
                          models[i].name, models[i - 1].source, models[i].source));
    }
  }
  return std::unique_ptr<ModelRepository>(new ModelRepository(std::move(models), backend->name()));
}

absl::StatusOr<std::unique_ptr<ModelRepository>> ModelRepository::LoadDirectory(
    const std::string& dir, ScoringBackend* backend) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    return absl::NotFoundError(absl::StrFormat("model repository %s is not a directory", dir));
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string file_name = entry.path().filename().string();
    if (file_name.empty() || file_name[0] == '.') continue;
    if (entry.is_regular_file(error)) {
      files.push_back(entry.path());
    } else if (entry.is_directory(error)) {
      // A model that is a directory (a CMU Sphinx model); other directories
      // are not models and are skipped.
      absl::StatusOr<ModelFormat> format = DetectModelFormat(entry.path().string());
      if (format.ok()) files.push_back(entry.path());
    }
  }
  if (error) {
    return absl::NotFoundError(absl::StrFormat("cannot list %s: %s", dir, error.message()));
  }
  if (files.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("model repository %s holds no models", dir));
  }
  std::sort(files.begin(), files.end());

  std::vector<ServedModel> models;
  for (const fs::path& file : files) {
    const std::string path = file.string();
    const absl::Time start = absl::Now();
    absl::StatusOr<ModelFormat> format = DetectModelFormat(path);
    if (!format.ok()) return WithPath(format.status(), path);
    absl::StatusOr<DiagGmmModel> model = LoadModel(path);
    if (!model.ok()) return WithPath(model.status(), path);
    auto prepared = backend->Prepare(std::make_shared<const DiagGmmModel>(*std::move(model)));
    if (!prepared.ok()) return WithPath(prepared.status(), path);
    models.push_back({.name = fs::is_directory(file) ? file.filename().string()
                                                     : file.stem().string(),
                      .source = path,
                      .format = std::string(ModelFormatName(*format)),
                      .load_time = absl::Now() - start,
                      .prepared = *std::move(prepared)});
  }
  return Create(std::move(models), backend);
}

absl::StatusOr<std::unique_ptr<ModelRepository>> ModelRepository::FromModels(
    std::vector<std::pair<std::string, std::shared_ptr<const DiagGmmModel>>> models,
    ScoringBackend* backend) {
  std::vector<ServedModel> served;
  for (auto& [name, model] : models) {
    if (model == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat("model '%s' is null", name));
    }
    const absl::Time start = absl::Now();
    auto prepared = backend->Prepare(std::move(model));
    if (!prepared.ok()) return WithPath(prepared.status(), name);
    served.push_back({.name = name,
                      .source = "memory",
                      .format = "memory",
                      .load_time = absl::Now() - start,
                      .prepared = *std::move(prepared)});
  }
  return Create(std::move(served), backend);
}

absl::StatusOr<const ServedModel*> ModelRepository::Find(absl::string_view name) const {
  auto it = std::lower_bound(models_.begin(), models_.end(), name,
                             [](const ServedModel& m, absl::string_view n) { return m.name < n; });
  if (it != models_.end() && it->name == name) return &*it;
  std::vector<absl::string_view> names;
  for (const ServedModel& m : models_) names.push_back(m.name);
  constexpr size_t kMaxListed = 20;
  const bool more = names.size() > kMaxListed;
  if (more) names.resize(kMaxListed);
  return absl::NotFoundError(absl::StrFormat("no model named '%s' (this server serves: %s%s)",
                                             name, absl::StrJoin(names, ", "),
                                             more ? ", ..." : ""));
}

}  // namespace gmmscore
