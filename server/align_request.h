// An Align request checked against the models served, made into an
// AlignJob for the AlignScheduler, and an alignment made into its answer.
// No gRPC calls in here, only messages (scoring_plan.h's counterpart).
//
//   GMM_ASSIGN_OR_RETURN(auto model, AligningModel(request, *repository));
//   GMM_ASSIGN_OR_RETURN(AlignJob job, AlignJobForRequest(request, *model, /*device=*/0,
//                                                         {.max_frames = 100000}));
//   job.done = ...;  job.deadline = ...;  scheduler->Submit(std::move(job));
//   ...
//   FillAlignResponse(request, *outcome, frame_seconds, &response);
#ifndef GMMSCORE_SERVER_ALIGN_REQUEST_H_
#define GMMSCORE_SERVER_ALIGN_REQUEST_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "gmmscore/v1/scorer.pb.h"
#include "server/align_scheduler.h"
#include "server/model_repository.h"

namespace gmmscore {

struct AlignLimits {
  // Most frames of one utterance: features sent, or audio at the model's
  // frame rate (--max_request_frames).
  int64_t max_frames = 100000;
};

// The served version of the model `request` names, once it can align:
//   NOT_FOUND            the model is not served
//   FAILED_PRECONDITION  the model has no aligner (not a Sphinx directory, or
//                        no dictionary configured for it)
absl::StatusOr<std::shared_ptr<const ServedModel>> AligningModel(const v1::AlignRequest& request,
                                                                 const ModelRepository& repository);

// The job for `request` with `model`'s aligner over device `device`
// (ServedModel::aligner_on; FAILED_PRECONDITION where it has none there),
// without done, cancelled or deadline, which are the RPC's, once it passes
// every check that needs no alignment:
//   INVALID_ARGUMENT     no words or a word not in the dictionary; no input;
//                        no frames or more than limits.max_frames; features
//                        of another dimension than the model's, or a value
//                        that is not a usable feature value; audio at
//                        another sample rate, or an odd number of bytes
//   OUT_OF_RANGE         more words than frames (the engine finds the
//                        other utterances too short for their transcript)
// Messages name the field, word, frame or rate. The job holds the model
// version's aligner, so an unload or replace does not take it away.
absl::StatusOr<AlignJob> AlignJobForRequest(const v1::AlignRequest& request, const ServedModel& model, int device,
                                            const AlignLimits& limits);

// Fills *response with the utterance id, the word segments (fillers
// marked), the phone segments when request.phones(), the likelihood, the
// frame count and time per frame, and the server's timing.
void FillAlignResponse(const v1::AlignRequest& request, const AlignOutcome& outcome, double frame_seconds,
                       v1::AlignResponse* response);

}  // namespace gmmscore

#endif  // GMMSCORE_SERVER_ALIGN_REQUEST_H_
