#!/usr/bin/env python3
"""Writes the shipped per-GPU cost profiles that are derived from fitted ones (the
derivations of docs/calibration.md, "Which profile for which GPU").

  python3 scripts/gpu_profiles.py        # rewrites datasets/clusters/{a100_ib400,
                                         # h100_sxm_ib400,h100_sxm_ib200,b200_ib400,b200_ib200,
                                         # b300_ib800,gb200_nvl72,gb300_nvl72}.profile.yaml

Inputs (all in datasets/clusters/): dgx_a100.profile.yaml (A100 intra-node curves fitted to
vTrain's 2/4/8-GPU nccl-tests tables; iteration fit on 1380 Megatron runs) and
h100.profile.yaml (op curves fitted to one H100's kernels and profiled steps).

Also sets the `nccl` section (the hierarchical NCCL model) of dgx_a100_base.profile.yaml and
dgx_a100.profile.yaml in place, replacing their inter-node all-reduce curve (their measured
intra-node curves stay: a curve wins over the model for its kind and level).

Collectives (profile section `nccl`, docs/formats/profile.md; each number's source in
docs/calibration.md, "Hierarchical NCCL model"):
- Inside a node: the A100 fit's latency (42.02 us + 3.94 us per rank beyond two) and ramp;
  ring bus bandwidth A100 229.3 GB/s (fitted), H100 / H200 370 GB/s (NVIDIA, nccl-tests issue
  212, nccl issue 1455), B200 740 GB/s (the H100 figure doubled for NVLink 5: a scaling);
  NVLS all-reduce algorithm bandwidth H100 / H200 275 GB/s (the same sources), B200 455 GB/s
  (the 8 x B200 Google Cloud A4 run, 480-484 GB/s at 8-16 GiB, over the ramp's 1.06 there).
- Between nodes, one NIC: HDR 200 Gb/s 14.46 GB/s and 49.0 us with its ramp (fitted by
  scripts/fit_nccl_model.py to CoreWeave's 32-rank A100 run); NDR 400 Gb/s for H100 / H200
  47 GB/s (NVIDIA: 46-48, nccl-tests issue 290), 46 us (a 2-node NVLS-tree run, nccl issue
  1244) on the A4 run's ramp; B200 45.68 GB/s fitted to the 2 x 8 A4 run; A100 on 400 Gb/s
  the HDR fit x 47/24 (NVIDIA's per-NIC figures, NDR over HDR). Every fabric: 2.7 us per
  host hop beyond two hosts (NCCL's tuner's network ring step, LL protocol).

Host CPU (docs/calibration.md, "Which profile for which GPU"): GB200 and GB300 are driven by
NVIDIA Grace (Arm Neoverse V2) CPUs, whose framework overhead per call is higher than an x86
host's. Their profiles' host times (each op category's `dispatch`, and `micro_batch_overhead`
/ `moe_sync_host_time` where the x86 profile sets them) are the x86 ones x 37.08 / 13.48:
the CPU time of one bf16 PyTorch `nn.Linear` forward on GB200 against an H100 DGX (Xeon
Platinum 8480C), NVIDIA/TransformerEngine issue 2053 ("High CPU overhead on Grace systems",
2025-08-11). Device-side times (`launch_overhead`: what the smallest kernels take on the GPU)
stay as they are.
"""
import copy
import os

import yaml

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "datasets", "clusters")


def load(name):
    with open(os.path.join(HERE, name)) as f:
        return yaml.safe_load(f)


# The hierarchical NCCL model's numbers (profile section `nccl`, docs/formats/profile.md;
# sources in docs/calibration.md, "Hierarchical NCCL model"). Ramps: fractions of the
# bandwidth vs log10(bytes), fitted by scripts/fit_nccl_model.py where a log is named.
A100_NVSWITCH_RAMP = [[6, 0.47], [7, 0.8608], [8, 0.8747], [9, 0.9361], [10, 1.063]]
CW_HDR_RAMP = [[3.311, 0.052], [4, 0.0244], [5, 0.0439], [6, 0.2041], [7, 0.6249],
               [8, 0.8616], [9, 0.9853], [9.934, 1]]   # a100_coreweave_32 (ring, 8 HDR NICs)
A4_RAMP = [[6.924, 0.2035], [7, 0.231], [8, 0.4947], [9, 0.8888], [10, 0.9906],
           [10.235, 1]]                 # b200_gke_a4_2x8 (NVLS tree over 8 NICs per node)


def nccl_intra(bus_gbps, nvls_gbps=None):
    """A host's level: the A100 fit's latency and ramp (vTrain's tables), the given ring bus
    bandwidth and NVLS all-reduce algorithm bandwidth."""
    out = {"latency": "42.02 us", "latency_per_rank": "3.94 us",
           "bus_bandwidth": f"{bus_gbps:.4g} GB/s", "efficiency": copy.deepcopy(A100_NVSWITCH_RAMP)}
    if nvls_gbps:
        out["nvls_bandwidth"] = f"{nvls_gbps:.4g} GB/s"
    return out


# Latency per host-to-host hop beyond two hosts: NCCL's tuner's network step of a ring with
# the LL protocol (src/graph/tuning.cc, hwLat NET ring LL).
HOP_US = 2.7


def nccl_inter(nic_gbps, latency_us, ramp):
    """Between hosts: one NIC's bus bandwidth, the latency and the ramp."""
    return {"latency": f"{latency_us:.4g} us", "latency_per_rank": f"{HOP_US:g} us",
            "bus_bandwidth": f"{nic_gbps:.4g} GB/s", "efficiency": copy.deepcopy(ramp)}


# One NIC's bus bandwidth (GB/s): HDR 200 Gb/s fitted to the CoreWeave A100 run (14.46); NDR
# 400 Gb/s for H100 / H200 as NVIDIA states it (46-48, nccl-tests issue 290); the A100 on
# 400 Gb/s the HDR fit x 47/24 (NVIDIA's per-NIC figures, NDR over HDR); B200 fitted to A4.
NCCL_INTER = {
    ("a100", 200): nccl_inter(14.46, 49.02, CW_HDR_RAMP),
    ("a100", 400): nccl_inter(14.46 * 47 / 24, 49.02, CW_HDR_RAMP),
    ("h100", 200): nccl_inter(14.46, 49.02, CW_HDR_RAMP),
    ("h100", 400): nccl_inter(47.0, 46.0, A4_RAMP),
    ("b200", 200): nccl_inter(14.46, 49.02, CW_HDR_RAMP),
    ("b200", 400): nccl_inter(45.68, 46.0, A4_RAMP),
}
NCCL_INTRA = {
    "a100": nccl_intra(229.3),
    "h100": nccl_intra(370, 275),   # ring 370, NVLS algbw 275 (nccl-tests 212, nccl 1455)
    "b200": nccl_intra(740, 455),   # ring: H100 x 2; NVLS fitted to the 8 x B200 A4 run
}


def nccl_section(gpu, fabric_gbit):
    return {"intra_host": copy.deepcopy(NCCL_INTRA[gpu]),
            "inter_host": copy.deepcopy(NCCL_INTER[(gpu, fabric_gbit)])}


def nvswitch_nccl_profile(name, description, h100, gpu, fabric_gbit):
    """h100's op curves with the NCCL model of `gpu` on the fabric (no measured curves)."""
    p = copy.deepcopy(h100)
    p["name"] = name
    p["description"] = description
    p.pop("fit_errors", None)
    p.pop("collective_curves", None)
    bus = NCCL_INTRA[gpu]["bus_bandwidth"]
    p["links"]["intra_host"] = {"latency": "3 us", "bandwidth": bus, "bandwidth_efficiency": 1}
    p["collectives"] = {"all_reduce": "auto"}
    p["nccl"] = nccl_section(gpu, fabric_gbit)
    return p


def write(name, profile):
    path = os.path.join(HERE, name)
    with open(path, "w") as f:
        f.write("# placer cost profile (docs/formats/profile.md), written by scripts/gpu_profiles.py\n")
        f.write("# from dgx_a100.profile.yaml and h100.profile.yaml; sources and assumptions:\n")
        f.write("# docs/calibration.md, \"Which profile for which GPU\".\n")
        yaml.safe_dump(profile, f, sort_keys=False, default_flow_style=None, width=100)


def with_a100_nccl(profile, fabric_gbit):
    """An A100 profile: its measured intra-host curves stay (they win over the model for
    groups on one host); the inter-host all-reduce curve gives way to the NCCL model."""
    p = copy.deepcopy(profile)
    ar = p.get("collective_curves", {}).get("all_reduce", {})
    ar.pop("inter_host", None)
    p["nccl"] = nccl_section("a100", fabric_gbit)
    return p


def set_a100_nccl_in_place(name, fabric_gbit):
    """with_a100_nccl on a fitted profile's text: drops the lines of its inter-node all-reduce
    curve (and its fit error) and appends the `nccl` section, leaving every other line as the
    fit wrote it."""
    path = os.path.join(HERE, name)
    with open(path) as f:
        lines = f.read().split("\n")
    out, section, kind, skipping = [], None, None, False
    for line in lines:
        indent = len(line) - len(line.lstrip(" "))
        if line and indent == 0:
            section = line.split(":")[0]
        if section == "collective_curves" and indent == 2:
            kind = line.strip().rstrip(":")
        if section == "nccl" or (line and indent <= 4 and skipping):
            skipping = False
        if section == "collective_curves" and kind == "all_reduce" and indent == 4:
            skipping = line.strip() == "inter_host:"
        stale = section == "fit_errors" and "collective_curves.all_reduce.inter_host:" in line
        if not skipping and section != "nccl" and not stale:
            out.append(line)
    text = "\n".join(out).rstrip("\n") + "\n"
    text += yaml.safe_dump({"nccl": nccl_section("a100", fabric_gbit)}, sort_keys=False,
                           default_flow_style=None, width=100)
    with open(path, "w") as f:
        f.write(text)


def main():
    for base in ("dgx_a100_base.profile.yaml", "dgx_a100.profile.yaml"):
        set_a100_nccl_in_place(base, 200)
    a100 = load("dgx_a100.profile.yaml")
    h100 = load("h100.profile.yaml")
    p = copy.deepcopy(a100)
    p["name"] = "a100-ib400"
    p["description"] = ("dgx_a100.profile.yaml with one NIC's bus bandwidth x 47/24 "
                        "(NVIDIA's per-NIC figures, NDR over HDR) for a 400 Gb/s "
                        "per-GPU fabric (scripts/gpu_profiles.py)")
    p.pop("fit_errors", None)
    write("a100_ib400.profile.yaml", with_a100_nccl(p, 400))
    for fabric in (400, 200):
        desc = (f"H100 / H200 SXM, 8 per node on NVSwitch, {fabric} Gb/s per GPU between nodes: "
                "op curves of h100.profile.yaml; collectives by the hierarchical NCCL model "
                "(ring 370 GB/s, NVLS all-reduce 275 GB/s inside a node, "
                f"{NCCL_INTER[('h100', fabric)]['bus_bandwidth']} per NIC between nodes; "
                "scripts/gpu_profiles.py)")
        write(f"h100_sxm_ib{fabric}.profile.yaml",
              nvswitch_nccl_profile(f"h100-sxm-ib{fabric}", desc, h100, "h100", fabric))
    b200 = {}
    for fabric in (400, 200):
        desc = (f"B200, 8 per node on NVSwitch, {fabric} Gb/s per GPU between nodes: op curves "
                "of h100.profile.yaml with the Blackwell tensor-core scales; collectives by the "
                "hierarchical NCCL model (ring 740 GB/s, NVLS all-reduce 455 GB/s inside a node, "
                f"{NCCL_INTER[('b200', fabric)]['bus_bandwidth']} per NIC between nodes; "
                "scripts/gpu_profiles.py)")
        b200[fabric] = nvswitch_nccl_profile(f"b200-ib{fabric}", desc, h100, "b200", fabric)
        write(f"b200_ib{fabric}.profile.yaml", with_tensor_scales(b200[fabric], "Blackwell"))
    write_blackwell_variants(b200[400])


# Tensor-core efficiency scales per GPU generation (GEMM, fused attention): the factors on
# h100.profile.yaml's 16- and 8-bit compute curves fitted to every dense Llama run of the
# generation's Megatron-Bridge tables; `./build/bench/stack_fidelity` prints them
# (docs/calibration.md, "Tensor-core efficiency per GPU generation").
TENSOR_SCALES = {"Blackwell": (0.881, 0.538), "Blackwell Ultra": (1.151, 0.607)}


def with_tensor_scales(profile, generation):
    """The profile with its matmul and attention compute curves (every dtype but f32 / f64)
    multiplied by the generation's scales, capped at 1. The attention entry's score times
    (the softmax's exponentials on the special-function units, not the tensor cores) are
    kept as they are."""
    p = copy.deepcopy(profile)
    for category, scale in zip(("matmul", "attention"), TENSOR_SCALES[generation]):
        op = p["ops"][category]
        curves = [op["compute_efficiency"]] + [
            c for d, c in op.get("compute_efficiency_by_dtype", {}).items() if d not in ("f32", "f64")]
        for curve in curves:
            for point in curve:
                point[1] = min(1.0, round(point[1] * scale, 6))
    return p


# Blackwell systems without collective measurements of their own: the 400 Gb/s B200 profile's
# op curves and NCCL model (an NVL72 NVLink domain counts as one host level, NVLink 5 as on
# the B200), with their generation's tensor-core scales; on an 800 Gb/s fabric one NIC's bus
# bandwidth is the B200 fit doubled (the line rate's ratio: a scaling, not a fit)
# (docs/calibration.md).
# The last field: whether the system's host CPU is Grace (host times x GRACE_HOST_RATIO).
BLACKWELL_VARIANTS = [
    ("b300_ib800", "Blackwell Ultra", 800,
     "B300 (HGX / DGX B300), 8 per node on NVSwitch, 800 Gb/s per GPU between nodes", False),
    ("gb200_nvl72", "Blackwell", 400,
     "GB200 NVL72, 72 GPUs per NVLink domain, 400 Gb/s per GPU between racks", True),
    ("gb300_nvl72", "Blackwell Ultra", 800,
     "GB300 NVL72, 72 GPUs per NVLink domain, 800 Gb/s per GPU between racks", True),
]


# Host CPU time per framework call on a Grace host over an x86 one: one bf16 `nn.Linear`
# forward, 37.08 us on GB200 against 13.48 us on an H100 DGX (Xeon Platinum 8480C);
# NVIDIA/TransformerEngine issue 2053 (2025-08-11).
GRACE_HOST_US, X86_HOST_US = 37.08, 13.48
GRACE_HOST_RATIO = GRACE_HOST_US / X86_HOST_US
# The profile's host CPU times (docs/formats/profile.md): per-op dispatch and these keys.
HOST_TIME_KEYS = ("micro_batch_overhead", "moe_sync_host_time")
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def seconds(text):
    """A profile time ("40 us", or a number of seconds) in seconds."""
    if isinstance(text, (int, float)):
        return float(text)
    value, unit = str(text).split()
    return float(value) * TIME_UNITS[unit]


def with_host_ratio(profile, ratio):
    """The profile with its host CPU times (every category's `dispatch`, HOST_TIME_KEYS)
    multiplied by `ratio`; device-side times (`launch_overhead`, the curves) unchanged."""
    p = copy.deepcopy(profile)
    for op in p["ops"].values():
        if "dispatch" in op:
            op["dispatch"] = f"{seconds(op['dispatch']) * ratio * 1e6:.4g} us"
    for key in HOST_TIME_KEYS:
        if key in p:
            p[key] = f"{seconds(p[key]) * ratio * 1e6:.4g} us"
    return p


def write_blackwell_variants(b200):
    nic_400 = NCCL_INTER[("b200", 400)]["bus_bandwidth"]
    for name, generation, fabric, what, grace in BLACKWELL_VARIANTS:
        p = with_tensor_scales(b200, generation)
        p["name"] = name.replace("_", "-")
        nic = float(nic_400.split()[0]) * fabric / 400
        p["nccl"]["inter_host"]["bus_bandwidth"] = f"{nic:.4g} GB/s"
        host = ""
        if grace:
            p = with_host_ratio(p, GRACE_HOST_RATIO)
            host = (f"; host times (ops.*.dispatch {p['ops']['matmul']['dispatch']}) of the x86 "
                    f"profile x {GRACE_HOST_US} / {X86_HOST_US} for the Grace CPU (one bf16 "
                    "nn.Linear forward's CPU time on GB200 over an H100 DGX, "
                    "NVIDIA/TransformerEngine issue 2053, 2025-08-11)")
        p["description"] = (f"{what}: op curves of h100.profile.yaml with the {generation} "
                            "tensor-core scales, the NCCL model of b200_ib400.profile.yaml "
                            f"with {nic:.4g} GB/s per NIC between hosts (no collective "
                            f"measurement of this system is shipped{host}; "
                            "scripts/gpu_profiles.py)")
        write(f"{name}.profile.yaml", p)


if __name__ == "__main__":
    main()
