#include "server/model_repository.h"

#include <algorithm>
#include <functional>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "kernels/core/status_macros.h"
#include "kernels/io/model_loader.h"
#include "server/client_text.h"
#include "server/log.h"

namespace gmmscore {
namespace {

namespace fs = std::filesystem;

absl::Status WithPath(const absl::Status& status, const std::string& path) {
  return PrefixStatus(path, status);
}

// The model name of a directory entry, or "" if the entry is not a model:
// a regular file by its stem, a CMU Sphinx model directory by its name.
std::string ModelNameOf(const fs::directory_entry& entry) {
  std::error_code error;
  const std::string file_name = entry.path().filename().string();
  if (file_name.empty() || file_name[0] == '.') return "";
  if (entry.is_regular_file(error)) return entry.path().stem().string();
  if (entry.is_directory(error) && DetectModelFormat(entry.path().string()).ok()) {
    return file_name;
  }
  return "";
}

// The aligner of the model at `path` (a `format` model) when `align` gives
// it a dictionary; null when none applies.
absl::StatusOr<std::shared_ptr<ModelAligner>> AlignerFor(const std::string& path, const std::string& name,
                                                         ModelFormat format, ScoringBackend* backend,
                                                         const AlignDictionaries& align) {
  bool own = false;
  const std::string dictionary = align.For(name, &own);
  if (dictionary.empty()) return nullptr;
  if (format != ModelFormat::kSphinx) {
    if (!own) return nullptr;
    return absl::InvalidArgumentError(absl::StrFormat(
        "model '%s' has a dictionary (%s), but only a CMU Sphinx model directory can align; this "
        "model is %s",
        name, dictionary, ModelFormatName(format)));
  }
  absl::StatusOr<std::unique_ptr<ModelAligner>> aligner =
      ModelAligner::Create(path, dictionary, backend, align.aligner);
  if (!aligner.ok()) return PrefixStatus(absl::StrFormat("aligner with dictionary %s", dictionary), aligner.status());
  return std::shared_ptr<ModelAligner>(*std::move(aligner));
}

// Reads and prepares the model at `path`, to be served as `name`, with its
// aligner if `align` gives it a dictionary. `fits(host_bytes)` is asked
// before preparing, with the host size as the estimate of what the backend
// will hold.
absl::StatusOr<ServedModel> ReadAndPrepare(const std::string& path, const std::string& name,
                                           ScoringBackend* backend, const AlignDictionaries& align,
                                           const std::map<std::string, FrontEndSource>& front_ends,
                                           const std::function<absl::Status(int64_t)>& fits) {
  const absl::Time start = absl::Now();
  absl::StatusOr<ModelFormat> format = DetectModelFormat(path);
  if (!format.ok()) return WithPath(format.status(), path);
  // Tied-mixture models (Sphinx semi-continuous / PTM, multi-stream HTK)
  // stay tied: the backend evaluates each codebook Gaussian once per frame.
  absl::StatusOr<LoadedModel> model = LoadAnyModel(path);
  if (!model.ok()) return WithPath(model.status(), path);
  if (fits) {
    absl::Status status = fits(model->ByteSize());
    if (!status.ok()) return WithPath(status, path);
  }
  auto prepared = model->tied != nullptr ? backend->PrepareTied(model->tied) : backend->Prepare(model->untied);
  if (!prepared.ok()) return WithPath(prepared.status(), path);
  absl::StatusOr<std::shared_ptr<ModelAligner>> aligner = AlignerFor(path, name, *format, backend, align);
  if (!aligner.ok()) return WithPath(aligner.status(), path);
  const auto configured = front_ends.find(name);
  absl::StatusOr<ModelFrontEnd> front_end =
      FrontEndForModel(path, *format, static_cast<int>((*prepared)->dim()),
                       configured == front_ends.end() ? nullptr : &configured->second);
  if (!front_end.ok()) return WithPath(front_end.status(), path);
  return ServedModel{.name = name,
                     .source = path,
                     .format = std::string(ModelFormatName(*format)),
                     .load_time = absl::Now() - start,
                     .prepared = *std::move(prepared),
                     .aligner = *std::move(aligner),
                     .front_end = std::move(front_end->pipeline),
                     .no_front_end = std::move(front_end->missing)};
}

absl::Status OverBudget(int64_t held, int64_t adding, int64_t budget) {
  return absl::ResourceExhaustedError(absl::StrFormat(
      "the model needs %.1f MiB but only %.1f MiB of the %.1f MiB model memory budget are free "
      "(replaced versions still used by live streams count until those streams end)",
      adding / 1048576.0, std::max<int64_t>(0, budget - held) / 1048576.0, budget / 1048576.0));
}

}  // namespace

std::string AlignDictionaries::For(const std::string& name, bool* own) const {
  auto it = per_model.find(name);
  *own = it != per_model.end() && !it->second.empty();
  return *own ? it->second : default_dictionary;
}

int64_t ServedModel::resident_bytes() const {
  const int64_t device = prepared->device_bytes();
  return device > 0 ? device : prepared->host_bytes();
}

ModelRepository::ModelRepository(Snapshot models, std::string device, std::string directory,
                                 ScoringBackend* backend, const RepositoryOptions& options)
    : device_(std::move(device)),
      directory_(std::move(directory)),
      backend_(backend),
      budget_bytes_(options.memory_budget_bytes),
      max_batch_frames_(options.max_batch_frames),
      precision_(options.precision),
      align_(options.align),
      front_ends_(options.front_ends),
      models_(std::move(models)) {}

int64_t ModelRepository::MaxBatchFramesOf(const std::string& name) const {
  auto it = max_batch_frames_.find(name);
  return it == max_batch_frames_.end() ? 0 : it->second;
}

Precision ModelRepository::PrecisionOf(const std::string& name) const {
  auto it = precision_.find(name);
  return it == precision_.end() ? Precision::kExact : it->second;
}

absl::StatusOr<std::unique_ptr<ModelRepository>> ModelRepository::Create(
    std::vector<ServedModel> models, ScoringBackend* backend, std::string directory,
    const RepositoryOptions& options) {
  const int64_t budget = options.memory_budget_bytes;
  if (models.empty()) return absl::InvalidArgumentError("no models to serve");
  std::sort(models.begin(), models.end(),
            [](const ServedModel& a, const ServedModel& b) { return a.name < b.name; });
  int64_t bytes = 0;
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
    bytes += models[i].resident_bytes();
  }
  if (budget > 0 && bytes > budget) return OverBudget(0, bytes, budget);
  Snapshot snapshot;
  for (ServedModel& model : models) {
    if (auto it = options.max_batch_frames.find(model.name); it != options.max_batch_frames.end()) {
      model.max_batch_frames = it->second;
    }
    if (auto it = options.precision.find(model.name); it != options.precision.end()) {
      model.precision = it->second;
    }
    snapshot.push_back(std::make_shared<const ServedModel>(std::move(model)));
  }
  return std::unique_ptr<ModelRepository>(new ModelRepository(
      std::move(snapshot), backend->name(), std::move(directory), backend, options));
}

absl::StatusOr<std::unique_ptr<ModelRepository>> ModelRepository::LoadDirectory(
    const std::string& dir, ScoringBackend* backend, const RepositoryOptions& options) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    return absl::NotFoundError(absl::StrFormat("model repository %s is not a directory", dir));
  }
  std::vector<std::pair<fs::path, std::string>> files;
  std::vector<std::string> strays;  // files that are no model format at all
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = ModelNameOf(entry);
    if (name.empty()) continue;
    // A README or notes beside the models is not a reason to stop serving;
    // a file that is a model format but does not load still is, and so are
    // an empty file (a model cut short mid-copy) and one that cannot be read.
    std::error_code size_error;
    if (absl::Status format = DetectModelFormat(entry.path().string()).status();
        absl::IsInvalidArgument(format) && entry.is_regular_file(size_error) && entry.file_size(size_error) > 0 &&
        !size_error) {
      LogWarning("model repository %s: skipping %s: %s", dir, entry.path().filename().string(), format.message());
      strays.push_back(entry.path().filename().string());
      continue;
    }
    if (std::find(options.skip_at_start.begin(), options.skip_at_start.end(), name) !=
        options.skip_at_start.end()) {
      continue;
    }
    files.emplace_back(entry.path(), name);
  }
  if (error) {
    return absl::NotFoundError(absl::StrFormat("cannot list %s: %s", dir, error.message()));
  }
  if (files.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "model repository %s holds no models%s", dir,
        strays.empty() ? "" : absl::StrCat(" (skipped, not a model format: ", absl::StrJoin(strays, ", "), ")")));
  }
  std::sort(files.begin(), files.end());

  std::vector<ServedModel> models;
  for (const auto& [file, name] : files) {
    absl::StatusOr<ServedModel> served = ReadAndPrepare(file.string(), name, backend, options.align, options.front_ends, nullptr);
    if (!served.ok()) return served.status();
    models.push_back(*std::move(served));
  }
  return Create(std::move(models), backend, dir, options);
}

std::set<std::string> ModelRepository::ModelNamesIn(const std::string& dir) {
  std::set<std::string> names;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = ModelNameOf(entry);
    if (!name.empty() && DetectModelFormat(entry.path().string()).ok()) names.insert(name);
  }
  return names;
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
  return Create(std::move(served), backend, "", RepositoryOptions{});
}

absl::StatusOr<std::shared_ptr<const ServedModel>> ModelRepository::Find(
    absl::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = std::lower_bound(
      models_.begin(), models_.end(), name,
      [](const std::shared_ptr<const ServedModel>& m, absl::string_view n) { return m->name < n; });
  if (it != models_.end() && (*it)->name == name) return *it;
  std::vector<absl::string_view> names;
  for (const auto& m : models_) names.push_back(m->name);
  constexpr size_t kMaxListed = 20;
  const bool more = names.size() > kMaxListed;
  if (more) names.resize(kMaxListed);
  return absl::NotFoundError(absl::StrFormat("no model named '%s' (this server serves: %s%s)",
                                             ClientText(name), absl::StrJoin(names, ", "),
                                             more ? ", ..." : ""));
}

std::vector<ServedModel> ModelRepository::models() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<ServedModel> out;
  out.reserve(models_.size());
  for (const auto& m : models_) out.push_back(*m);
  return out;
}

int64_t ModelRepository::RetiredBytesLocked(int* versions) const {
  retired_.erase(std::remove_if(retired_.begin(), retired_.end(),
                                [](const auto& weak) { return weak.expired(); }),
                 retired_.end());
  int64_t bytes = 0;
  *versions = 0;
  for (const auto& weak : retired_) {
    if (std::shared_ptr<const PreparedModel> held = weak.lock()) {
      const int64_t device = held->device_bytes();
      bytes += device > 0 ? device : held->host_bytes();
      ++*versions;
    }
  }
  return bytes;
}

ModelRepository::MemoryUsage ModelRepository::memory() const {
  absl::MutexLock lock(&mu_);
  MemoryUsage usage;
  for (const auto& m : models_) usage.served_bytes += m->resident_bytes();
  usage.retired_bytes = RetiredBytesLocked(&usage.retired_versions);
  usage.budget_bytes = budget_bytes_;
  return usage;
}

absl::StatusOr<ModelRepository::LoadResult> ModelRepository::Load(const std::string& name) {
  if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "'%s' is not a model name (a file name without extension, no '/', not starting "
        "with '.')",
        ClientText(name)));
  }
  if (directory_.empty()) {
    return absl::FailedPreconditionError(
        "this server's models were given in memory; there is no repository directory to load "
        "from");
  }
  absl::MutexLock load_lock(&load_mu_);
  std::error_code error;
  std::string path;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory_, error)) {
    if (ModelNameOf(entry) == name) {
      path = entry.path().string();
      break;
    }
  }
  if (path.empty()) {
    return absl::NotFoundError(absl::StrFormat("no model '%s' in the repository %s%s", ClientText(name),
                                               directory_,
                                               error ? ": " + error.message() : std::string()));
  }
  // Everything held now; Load and Unload are serialised, so only releases
  // (which make room) happen meanwhile.
  auto held_now = [this] {
    MemoryUsage usage = memory();
    return usage.served_bytes + usage.retired_bytes;
  };
  auto fits = [&](int64_t adding) {
    if (budget_bytes_ <= 0) return absl::OkStatus();
    const int64_t held = held_now();
    return held + adding > budget_bytes_ ? OverBudget(held, adding, budget_bytes_)
                                         : absl::OkStatus();
  };
  absl::StatusOr<ServedModel> served = ReadAndPrepare(path, name, backend_, align_, front_ends_, fits);
  if (!served.ok()) return served.status();
  // The backend's real size may differ from the host estimate.
  if (absl::Status status = fits(served->resident_bytes()); !status.ok()) {
    return WithPath(status, path);
  }

  served->max_batch_frames = MaxBatchFramesOf(name);
  served->precision = PrecisionOf(name);

  LoadResult result;
  absl::MutexLock lock(&mu_);
  auto it = std::lower_bound(
      models_.begin(), models_.end(), name,
      [](const std::shared_ptr<const ServedModel>& m, const std::string& n) { return m->name < n; });
  if (it != models_.end() && (*it)->name == name) {
    served->version = (*it)->version + 1;
    retired_.push_back((*it)->prepared);
    result.replaced = true;
    result.model = std::make_shared<const ServedModel>(*std::move(served));
    *it = result.model;
  } else {
    result.model = std::make_shared<const ServedModel>(*std::move(served));
    models_.insert(it, result.model);
  }
  return result;
}

absl::StatusOr<std::shared_ptr<const ServedModel>> ModelRepository::PrepareAdapted(
    const ServedModel& base, std::shared_ptr<const DiagGmmModel> model, std::string label) {
  if (model == nullptr) return absl::InvalidArgumentError("no adapted model");
  absl::MutexLock load_lock(&load_mu_);  // budget checks see one change at a time
  if (budget_bytes_ > 0) {
    const MemoryUsage usage = memory();
    const int64_t held = usage.served_bytes + usage.retired_bytes;
    if (held + model->ByteSize() > budget_bytes_) {
      return OverBudget(held, model->ByteSize(), budget_bytes_);
    }
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<std::shared_ptr<const PreparedModel>> prepared = backend_->Prepare(std::move(model));
  if (!prepared.ok()) return prepared.status();
  auto served = std::make_shared<ServedModel>();
  served->name = std::move(label);
  served->source = "adaptation";
  served->format = "memory";
  served->load_time = absl::Now() - start;
  served->prepared = *std::move(prepared);
  served->max_batch_frames = base.max_batch_frames;
  served->precision = base.precision;
  absl::MutexLock lock(&mu_);
  retired_.push_back(served->prepared);  // counted while held
  return std::shared_ptr<const ServedModel>(std::move(served));
}

absl::Status ModelRepository::Publish(const std::string& name,
                                      std::shared_ptr<const ServedModel> model) {
  if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "'%s' is not a model name (no '/', not empty, not starting with '.')", ClientText(name)));
  }
  if (model == nullptr || model->source != "adaptation") {
    return absl::InvalidArgumentError("only adapted models are published");
  }
  absl::MutexLock load_lock(&load_mu_);
  absl::MutexLock lock(&mu_);
  auto it = std::lower_bound(
      models_.begin(), models_.end(), name,
      [](const std::shared_ptr<const ServedModel>& m, const std::string& n) { return m->name < n; });
  const bool replacing = it != models_.end() && (*it)->name == name;
  if (replacing && (*it)->source != "adaptation") {
    return absl::FailedPreconditionError(absl::StrFormat(
        "'%s' is a model loaded from %s; an adaptation cannot replace it (choose another save_as)",
        ClientText(name), (*it)->source));
  }
  auto published = std::make_shared<ServedModel>(*model);
  published->name = name;
  published->usage = std::make_shared<ModelUsage>();  // its own counts under the new name
  // Served now: counted as served, no longer as retired.
  const PreparedModel* prepared = published->prepared.get();
  retired_.erase(std::remove_if(retired_.begin(), retired_.end(),
                                [prepared](const auto& weak) {
                                  return weak.lock().get() == prepared;
                                }),
                 retired_.end());
  if (replacing) {
    if ((*it)->prepared != published->prepared) retired_.push_back((*it)->prepared);
    published->version = (*it)->version + 1;
    *it = std::move(published);
  } else {
    models_.insert(it, std::move(published));
  }
  return absl::OkStatus();
}

absl::Status ModelRepository::Unload(const std::string& name) {
  absl::MutexLock load_lock(&load_mu_);
  absl::MutexLock lock(&mu_);
  auto it = std::find_if(models_.begin(), models_.end(),
                         [&](const auto& m) { return m->name == name; });
  if (it == models_.end()) {
    return absl::NotFoundError(absl::StrFormat("no model named '%s' is served", ClientText(name)));
  }
  if (models_.size() == 1) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "'%s' is the last model served; load another before unloading it", name));
  }
  retired_.push_back((*it)->prepared);
  models_.erase(it);
  return absl::OkStatus();
}

}  // namespace gmmscore
