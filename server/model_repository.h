// ModelRepository: the models a daemon serves, loaded once at start and
// prepared on its scoring backend, looked up by name.
//
//   GMM_ASSIGN_OR_RETURN(std::unique_ptr<ModelRepository> repo,
//                        ModelRepository::LoadDirectory("/srv/models", backend.get()));
//   GMM_ASSIGN_OR_RETURN(const ServedModel* model, repo->Find("spk1"));
//
// Thread safety: immutable after creation; safe to share across threads.
#ifndef GMMSCORE_SERVER_MODEL_REPOSITORY_H_
#define GMMSCORE_SERVER_MODEL_REPOSITORY_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "kernels/model/diag_gmm_model.h"
#include "kernels/score/scoring_backend.h"

namespace gmmscore {

struct ServedModel {
  std::string name;    // what clients ask for
  std::string source;  // the file it came from, or "memory"
  std::string format;  // "native", "kaldi-text", ... or "memory"
  absl::Duration load_time;  // reading and preparing it
  std::shared_ptr<const PreparedModel> prepared;

  const DiagGmmModel& model() const { return prepared->model(); }
};

class ModelRepository {
 public:
  // Loads every regular file directly in `dir` as a model named by the file
  // name without its last extension ("spk1.mdl" -> "spk1"), whatever its
  // format (detected by content: native, Kaldi, HTK MMF), and every
  // subdirectory that holds a CMU Sphinx model, named by the directory;
  // other subdirectories and names starting with '.' are skipped. Each is
  // prepared on `backend`, which must outlive the repository.
  // NOT_FOUND if `dir` is not a directory; INVALID_ARGUMENT if it holds no
  // model or two files give the same name; a file's load or Prepare error
  // (its code kept, the message prefixed with the path) otherwise.
  static absl::StatusOr<std::unique_ptr<ModelRepository>> LoadDirectory(
      const std::string& dir, ScoringBackend* backend);

  // The same for models already in memory (tests, embedding). INVALID_ARGUMENT
  // for an empty list, an empty or duplicate name, or a null model.
  static absl::StatusOr<std::unique_ptr<ModelRepository>> FromModels(
      std::vector<std::pair<std::string, std::shared_ptr<const DiagGmmModel>>> models,
      ScoringBackend* backend);

  // NOT_FOUND naming `name` and the models served.
  absl::StatusOr<const ServedModel*> Find(absl::string_view name) const;

  // Sorted by name.
  const std::vector<ServedModel>& models() const { return models_; }
  // The backend's name ("cpu", "cuda:0", ...).
  const std::string& device() const { return device_; }

 private:
  ModelRepository(std::vector<ServedModel> models, std::string device);
  static absl::StatusOr<std::unique_ptr<ModelRepository>> Create(std::vector<ServedModel> models,
                                                                 ScoringBackend* backend);

  const std::vector<ServedModel> models_;
  const std::string device_;
};

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_MODEL_REPOSITORY_H_
