#include "kernels/cpu/blas_core.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace gmmscore {
namespace {

TEST(BlasCoreTest, GenericKernelsOnAnAvx2CpuAreWarnedOfWithTheVariableToSet) {
  const std::string warning = BlasCoreWarningFor("Prescott", "Haswell", false);
  EXPECT_NE(warning.find("Prescott"), std::string::npos) << warning;
  EXPECT_NE(warning.find("OPENBLAS_CORETYPE=Haswell"), std::string::npos) << warning;
  EXPECT_NE(BlasCoreWarningFor("SANDYBRIDGE", "Haswell", false), "");
}

TEST(BlasCoreTest, NoWarningWhereTheKernelsSuitOrTheOperatorChose) {
  EXPECT_EQ(BlasCoreWarningFor("Haswell", "Haswell", false), "");
  EXPECT_EQ(BlasCoreWarningFor("Cooperlake", "Haswell", false), "");
  EXPECT_EQ(BlasCoreWarningFor("Zen", "Haswell", false), "");
  // A core name OpenBLAS gained after this list: more likely new than slow.
  EXPECT_EQ(BlasCoreWarningFor("Granite", "Haswell", false), "");
  // The CPU has no AVX2: the generic kernels are what it can run.
  EXPECT_EQ(BlasCoreWarningFor("Prescott", "", false), "");
  // OPENBLAS_CORETYPE set: the operator chose (even Prescott, to compare).
  EXPECT_EQ(BlasCoreWarningFor("Prescott", "Haswell", true), "");
}

TEST(BlasCoreTest, TheLinkedOpenBlasNamesItsCore) {
  // Whatever this machine gets, OpenBLAS names it; and the warning agrees
  // with the facts it is computed from.
  const std::string core = BlasCoreName();
  EXPECT_FALSE(core.empty());
  EXPECT_EQ(BlasCoreWarning(), BlasCoreWarningFor(core, AvailableBlasCoreType(),
                                                  std::getenv("OPENBLAS_CORETYPE") != nullptr));
}

}  // namespace
}  // namespace gmmscore
