// The driver version placer-calibrate writes into its CSV header, from the NVRM line of
// /proc/driver/nvidia/version (both the proprietary and the open kernel module's wording).
#include <gtest/gtest.h>

#include "driver_info.h"

namespace placer::calibrate {
namespace {

TEST(DriverInfo, ProprietaryModuleLine) {
  EXPECT_EQ(nvrm_driver_version(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024"),
            "550.54.15");
}

TEST(DriverInfo, OpenModuleLineOfTheMeasuredH100) {
  // As read on the H100 of datasets/measurements/h100 (2026-11-27); the old parser took
  // "for" as the version.
  EXPECT_EQ(nvrm_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                                "580.159.04  Release Build  (nixbld@)"),
            "580.159.04");
}

TEST(DriverInfo, NoVersionGivesEmpty) {
  EXPECT_EQ(nvrm_driver_version("NVRM version: NVIDIA UNIX Kernel Module"), "");
  EXPECT_EQ(nvrm_driver_version("GCC version:  gcc version 15.3.0 (GCC)"), "");
  EXPECT_EQ(nvrm_driver_version(""), "");
}

}  // namespace
}  // namespace placer::calibrate
