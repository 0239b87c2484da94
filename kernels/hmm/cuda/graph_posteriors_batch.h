// Baum-Welch's forward-backward on a CUDA device, in the per-utterance
// shape TrainSphinxModel takes (sphinx_baum_welch.h): GraphForwardBackwardCuda
// with state posteriors, and when the batch fails because of one utterance
// (no path, bad scores), each utterance alone so that the others go on.
//
//   options.forward_backward = CudaGraphPosteriors(/*device=*/0);
#ifndef GMMSCORE_KERNELS_HMM_CUDA_GRAPH_POSTERIORS_BATCH_H_
#define GMMSCORE_KERNELS_HMM_CUDA_GRAPH_POSTERIORS_BATCH_H_

#include "kernels/hmm/sphinx_baum_welch.h"

namespace gmmscore {

GraphPosteriorsBatch CudaGraphPosteriors(int device);

}  // namespace gmmscore

#endif  // GMMSCORE_KERNELS_HMM_CUDA_GRAPH_POSTERIORS_BATCH_H_
