#pragma once
// What `placer place` builds by hand besides the method registry (agents/api/): the learned
// placers made from a policy file with their options (gdp and its option table, rainbow-pp
// with --policy, placeto, autosync) and whether LibTorch is there. The command line includes
// this entry point, never a family's folder (scripts/check_layers.sh).

#include "agents/common/method_option_tables.h"
#include "agents/gdp/gdp.h"
#include "agents/placeto/placeto.h"
#include "agents/rainbow/rainbow_pp_policy.h"
#include "agents/sync/autosync_rl.h"
