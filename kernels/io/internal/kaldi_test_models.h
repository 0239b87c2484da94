// Small Kaldi models for tests that need a real TransitionModel.
#ifndef GMMSCORE_KERNELS_IO_INTERNAL_KALDI_TEST_MODELS_H_
#define GMMSCORE_KERNELS_IO_INTERNAL_KALDI_TEST_MODELS_H_

#include <string>

namespace gmmscore::io_testing {

// The TransitionModel of two phones with Kaldi's default topology (three
// emitting states, left to right, self-loop 0.75), each (phone, state) its
// own pdf: 6 pdfs, transition-states 1..6, transition-ids 2s-1 (self-loop)
// and 2s (forward) of pdf s-1. Kaldi's text layout: put an AmDiagGmm of 6
// pdfs after it to make a final.mdl.
inline std::string SixPdfTransitionModelText() {
  std::string text =
      "<TransitionModel> \n<Topology> \n<TopologyEntry> \n<ForPhones> \n1 2 \n</ForPhones> \n"
      "<State> 0 <PdfClass> 0 <Transition> 0 0.75 <Transition> 1 0.25 </State> \n"
      "<State> 1 <PdfClass> 1 <Transition> 1 0.75 <Transition> 2 0.25 </State> \n"
      "<State> 2 <PdfClass> 2 <Transition> 2 0.75 <Transition> 3 0.25 </State> \n"
      "<State> 3 </State> \n</TopologyEntry> \n</Topology> \n<Triples> 6 \n"
      "1 0 0 \n1 1 1 \n1 2 2 \n2 0 3 \n2 1 4 \n2 2 5 \n</Triples> \n<LogProbs> \n [ 0";
  for (int i = 0; i < 6; ++i) text += " -0.2876821 -1.386294";
  return text + " ]\n</LogProbs> \n</TransitionModel> \n";
}

}  // namespace gmmscore::io_testing

#endif  // GMMSCORE_KERNELS_IO_INTERNAL_KALDI_TEST_MODELS_H_
