#pragma once
// The NVIDIA kernel driver's version from /proc/driver/nvidia/version (host-only, so it is
// unit-tested without a GPU).

#include <string>

namespace placer::calibrate {

/// The version in the NVRM line, e.g. "580.159.04" from both
///   "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..." and
///   "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...";
/// the first word after "Module" made of digits and dots with at least one dot. "" if none.
std::string nvrm_driver_version(const std::string& line);

}  // namespace placer::calibrate
