#!/usr/bin/env python3
"""Writes the shipped per-GPU cost profiles that are derived from fitted ones (the
derivations of docs/calibration.md, "Which profile for which GPU").

  python3 scripts/gpu_profiles.py        # rewrites datasets/clusters/{a100_ib400,
                                         # h100_sxm_ib400,h100_sxm_ib200,b200_ib400,b200_ib200,
                                         # b300_ib800,gb200_nvl72,gb300_nvl72}.profile.yaml

Inputs (all in datasets/clusters/): b200_a4.profile.yaml (below), dgx_a100.profile.yaml (A100 intra-node all-reduce curve
fitted to vTrain's 2/4/8-GPU nccl-tests tables; inter-node all-reduce curve fitted to
CoreWeave's 32-rank HDR 200 Gb/s run; iteration fit on 1380 Megatron runs) and
h100.profile.yaml (op curves fitted to one H100's kernels and profiled steps).

Derivations (each a stated assumption, not a fit):
- 400 Gb/s fabric: the HDR inter-node all-reduce curve with its bus bandwidth scaled by the
  ratio of the per-NIC bus bandwidths NVIDIA states nccl-tests reaches: 46-48 GB/s per NDR
  400 Gb/s NIC (github.com/NVIDIA/nccl-tests issue 290; midpoint 47) over 24 GB/s per HDR
  200 Gb/s NIC (nccl-tests issues 119 and 252), 47 / 24 = 1.958 (the line rates give 2).
- H100 / H200 intra-node: the A100 curve's latency and size ramp, with the bus bandwidths
  NVIDIA states for 8 H100 on NVLink 4: all-reduce (NVLink SHARP) 480 GB/s, all-gather /
  reduce-scatter 370 GB/s (nccl-tests issue 212, nccl issue 1455); p2p link 370 GB/s.
- B200 all-gather / reduce-scatter intra-node: the H100 figure doubled (NVLink 5 has twice
  NVLink 4's bandwidth); no public B200 table of them was found.

Fits (b200_a4.profile.yaml, `placer calibrate fit` on the published Google Cloud A4 runs in
measurements/, command in docs/calibration.md): the B200 intra-node all-reduce curve (8 GPUs)
and, for the 400 Gb/s B200 profile, the inter-node all-reduce curve (2 x 8 GPUs).
"""
import copy
import os

import yaml

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "datasets", "clusters")


def load(name):
    with open(os.path.join(HERE, name)) as f:
        return yaml.safe_load(f)


def gbps(text):
    value, unit = text.split()
    assert unit == "GB/s", text
    return float(value)


def scaled_curve(curve, bus_bandwidth):
    out = copy.deepcopy(curve)
    out["bus_bandwidth"] = f"{bus_bandwidth:.4g} GB/s"
    return out


# Bus bandwidth nccl-tests reaches per NIC, as NVIDIA states it (sources above), by line rate.
NIC_BUS_GBPS = {200: 24.0, 400: 47.0}


def with_inter_host(profile, fabric_gbit, a100):
    """The profile with the A100 HDR inter-node all-reduce curve scaled to the fabric."""
    hdr = a100["collective_curves"]["all_reduce"]["inter_host"]
    scale = NIC_BUS_GBPS[fabric_gbit] / NIC_BUS_GBPS[200]
    profile.setdefault("collective_curves", {}).setdefault("all_reduce", {})["inter_host"] = (
        scaled_curve(hdr, gbps(hdr["bus_bandwidth"]) * scale))
    return profile


def nvswitch_profile(name, description, h100, a100, all_reduce, other_gbps, fabric_gbit,
                     inter_host=None):
    """h100's op curves with intra-node collectives: `all_reduce` a fitted curve or a bus
    bandwidth for the A100 curve's ramp, the others at `other_gbps`; the inter-node
    all-reduce a fitted curve, else the HDR curve scaled to the fabric."""
    p = copy.deepcopy(h100)
    p["name"] = name
    p["description"] = description
    p.pop("fit_errors", None)
    intra = a100["collective_curves"]["all_reduce"]["intra_host"]
    p["links"]["intra_host"] = {"latency": "3 us", "bandwidth": f"{other_gbps:g} GB/s",
                                "bandwidth_efficiency": 1}
    p["collectives"] = {"all_reduce": "auto"}
    fitted = isinstance(all_reduce, dict)
    p["collective_curves"] = {
        "all_reduce": {"intra_host": copy.deepcopy(all_reduce) if fitted
                       else scaled_curve(intra, all_reduce)},
        "all_gather": {"intra_host": scaled_curve(intra, other_gbps)},
        "reduce_scatter": {"intra_host": scaled_curve(intra, other_gbps)},
    }
    if inter_host is not None:
        p["collective_curves"]["all_reduce"]["inter_host"] = copy.deepcopy(inter_host)
        return p
    return with_inter_host(p, fabric_gbit, a100)


def write(name, profile):
    path = os.path.join(HERE, name)
    with open(path, "w") as f:
        f.write("# placer cost profile (docs/formats/profile.md), written by scripts/gpu_profiles.py\n")
        f.write("# from dgx_a100.profile.yaml and h100.profile.yaml; sources and assumptions:\n")
        f.write("# docs/calibration.md, \"Which profile for which GPU\".\n")
        yaml.safe_dump(profile, f, sort_keys=False, default_flow_style=None, width=100)


def main():
    a100 = load("dgx_a100.profile.yaml")
    h100 = load("h100.profile.yaml")
    p = copy.deepcopy(a100)
    p["name"] = "a100-ib400"
    p["description"] = ("dgx_a100.profile.yaml with the inter-node all-reduce bus bandwidth "
                        "x 47/24 (NVIDIA's per-NIC figures, NDR over HDR) for a 400 Gb/s "
                        "per-GPU fabric (scripts/gpu_profiles.py)")
    p.pop("fit_errors", None)
    write("a100_ib400.profile.yaml", with_inter_host(p, 400, a100))
    for fabric in (400, 200):
        desc = (f"H100 / H200 SXM, 8 per node on NVSwitch, {fabric} Gb/s per GPU between nodes: "
                "op curves of h100.profile.yaml, intra-node all-reduce 480 GB/s and all-gather / "
                "reduce-scatter 370 GB/s bus bandwidth on the A100 curve's ramp, inter-node "
                f"all-reduce the HDR curve x {NIC_BUS_GBPS[fabric] / NIC_BUS_GBPS[200]:.4g} "
                "(scripts/gpu_profiles.py)")
        write(f"h100_sxm_ib{fabric}.profile.yaml",
              nvswitch_profile(f"h100-sxm-ib{fabric}", desc, h100, a100, 480, 370, fabric))
    a4 = load("b200_a4.profile.yaml")["collective_curves"]["all_reduce"]
    b200 = {}
    for fabric in (400, 200):
        inter = (a4["inter_host"], "fitted to a 2 x 8 B200 Google Cloud A4 run") if fabric == 400 \
            else (None, "the HDR curve")
        desc = (f"B200, 8 per node on NVSwitch, {fabric} Gb/s per GPU between nodes: op curves "
                "of h100.profile.yaml with the Blackwell tensor-core scales, intra-node "
                "all-reduce fitted to an 8 x B200 Google Cloud A4 run, all-gather / "
                "reduce-scatter 740 GB/s bus bandwidth on the A100 curve's ramp, inter-node "
                f"all-reduce {inter[1]} (scripts/gpu_profiles.py)")
        b200[fabric] = nvswitch_profile(f"b200-ib{fabric}", desc, h100, a100, a4["intra_host"],
                                        740, fabric, inter[0])
        write(f"b200_ib{fabric}.profile.yaml", with_tensor_scales(b200[fabric], "Blackwell"))
    write_blackwell_variants(b200[400])


# Tensor-core efficiency scales per GPU generation (GEMM, fused attention): the factors on
# h100.profile.yaml's 16- and 8-bit compute curves fitted to every dense Llama run of the
# generation's Megatron-Bridge tables; `./build/bench/stack_fidelity` prints them
# (docs/calibration.md, "Tensor-core efficiency per GPU generation").
TENSOR_SCALES = {"Blackwell": (0.888, 0.543), "Blackwell Ultra": (1.164, 0.563)}


def with_tensor_scales(profile, generation):
    """The profile with its matmul and attention compute curves (every dtype but f32 / f64)
    multiplied by the generation's scales, capped at 1."""
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
# op and collective curves, as fractions of each cluster file's own peaks, with their
# generation's tensor-core scales (docs/calibration.md).
BLACKWELL_VARIANTS = [
    ("b300_ib800", "Blackwell Ultra",
     "B300 (HGX / DGX B300), 8 per node on NVSwitch, 800 Gb/s per GPU between nodes"),
    ("gb200_nvl72", "Blackwell",
     "GB200 NVL72, 72 GPUs per NVLink domain, 400 Gb/s per GPU between racks"),
    ("gb300_nvl72", "Blackwell Ultra",
     "GB300 NVL72, 72 GPUs per NVLink domain, 800 Gb/s per GPU between racks"),
]


def write_blackwell_variants(b200):
    for name, generation, what in BLACKWELL_VARIANTS:
        p = with_tensor_scales(b200, generation)
        p["name"] = name.replace("_", "-")
        p["description"] = (f"{what}: op curves of h100.profile.yaml with the {generation} "
                            "tensor-core scales, collective curves of b200_ib400.profile.yaml "
                            "(no collective measurement of this system is shipped; "
                            "scripts/gpu_profiles.py)")
        write(f"{name}.profile.yaml", p)


if __name__ == "__main__":
    main()
