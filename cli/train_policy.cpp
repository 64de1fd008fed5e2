// `placer train-policy`: pretrains a learned policy; `--agent A` picks the trainer from the
// trainer registry (agents/training/trainers.h: gdp, the default, rainbow-pp, placeto, autosync),
// each in its own file on the training harness (agents/common/training_run.h). Here: the options
// and the lookup.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "agents/training/train_config.h"
#include "agents/training/trainer_run.h"
#include "agents/training/trainers.h"
#include "cli/commands.h"
#include "src/util/error.h"

namespace placer::cli {
namespace {

void run_train(TrainArgs& a, const CLI::App& sub) {
  if (a.resume && a.overwrite) throw Error("--resume and --overwrite exclude each other");
  std::string agent = a.agent;
  if (agent.empty()) agent = a.config.empty() ? "" : train_config_file_agent(a.config);
  // The trainers keep the config's value of an option not given (all long names, so
  // get_name() is the name they ask for).
  a.given.clear();
  for (const CLI::Option* opt : sub.get_options()) {
    if (opt->count() > 0) a.given.insert(opt->get_name());
  }
  try {
    find_trainer(agent.empty() ? "gdp" : agent).run(a);
  } catch (const TrainerExit& e) {
    throw CLI::RuntimeError(e.code);
  }
}

/// The --agent help: every trainer with its line.
std::string agent_help() {
  std::string h = "Policy to pretrain:";
  for (const TrainerInfo& t : trainers()) h += " " + t.name + " (" + t.doc + ");";
  return h + " default: the config's `agent:`, else gdp";
}

}  // namespace

void register_train_policy(CLI::App& app);
static CommandRegistrar train_policy_registrar(17, "train-policy", register_train_policy);

void register_train_policy(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* sub = app.add_subcommand(
      "train-policy",
      "Pretrain the GDP placement policy with PPO on a graph corpus (docs/gdp.md), or with\n"
      "--agent rainbow-pp the pipeline-cut policy on generated arrays\n"
      "(docs/rainbow_pp_inference.md), or with --agent placeto a Placeto policy on a graph\n"
      "family (docs/placeto.md); writes checkpoints, policy.pt (for `placer place\n"
      "--policy`), log.jsonl and config.yaml.");
  sub->add_option("--agent", args->agent, agent_help());
  sub->add_option("--config", args->config,
                  "Training configuration (train.yaml; see examples/train_policy.yaml, "
                  "train_rainbow_pp.yaml, train_placeto.yaml). "
                  "Without it: the defaults plus the options below")
      ->check(CLI::ExistingFile);
  sub->add_option("--set", args->sets,
                  "Override one key, KEY=VALUE, as named in the YAML (net.hidden=32, "
                  "ppo.lr=3e-4, device_counts=[2,4]); repeatable, applied after the file")
      ->type_name("KEY=VALUE");
  sub->add_option("--corpus", args->corpus, "Corpus manifest (*.corpus.yaml); overrides corpus")
      ->check(CLI::ExistingFile);
  sub->add_option("--cluster", args->clusters,
                  "Cluster file (*.cluster.yaml), repeatable; replaces clusters (placeto: one, "
                  "replaces cluster)")
      ->check(CLI::ExistingFile);
  sub->add_option("--updates", args->updates, "PPO updates in total (overrides updates)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--seed", args->seed, "Seed (overrides seed)");
  sub->add_option("--eval-every", args->eval_every,
                  "Updates between validation evaluations, 0 = off (overrides eval_every)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("-o,--output-dir", args->output_dir, "Output folder (overrides output_dir)");
  sub->add_option("--dist-url", args->dist_url,
                  "Distributed run: rendezvous tcp://HOST:PORT (rank 0 serves it) or "
                  "file:///PATH; default: MASTER_ADDR/MASTER_PORT (docs/distributed.md)");
  sub->add_option("--rank", args->rank, "Distributed run: this process's rank (default: $RANK)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--world-size", args->world_size,
                  "Distributed run: number of processes (default: $WORLD_SIZE, else 1)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--dist-timeout", args->dist_timeout,
                  "Seconds the rendezvous and every collective may take; a lost rank ends the "
                  "run after at most this (overrides dist.timeout, default 60)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--threads", args->threads,
                  "Rollout (simulator) threads in this process; 0 = all cores (default)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--device", args->device,
                  "Where the network trains: cpu (default) or cuda (needs a CUDA LibTorch)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_flag("--resume", args->resume,
                "Continue the run in the output folder from its checkpoint.pt");
  sub->add_flag("--overwrite", args->overwrite,
                "Start over in an output folder that already holds a run");
  sub->add_flag("--plot", args->plot,
                "After training, plot log.jsonl to curves.png in the output folder (gnuplot)");
  sub->add_flag("--plot-only", args->plot_only,
                "Only plot the existing run in the output folder (no training)");
  sub->add_flag("--print-config", args->print_config,
                "Print the effective configuration as YAML and exit (no training)");
  sub->callback([args, sub]() { run_train(*args, *sub); });
}

}  // namespace placer::cli
