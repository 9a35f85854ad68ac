#pragma once
/// \file
/// Hosts of a Slurm allocation, read from the environment srun/sbatch/salloc set up.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/common/result.hpp"
#include "ferry/hosts/host_list.hpp"

namespace ferry {

/// Expands a Slurm hostlist expression into host names, in Slurm's order:
/// `node[01-04,07]` → node01..node04,node07 (the low end's width sets zero padding),
/// `a[1-2]b,c` → a1b,a2b,c, `r[1-2]n[1-2]` → r1n1,r1n2,r2n1,r2n2 (the first group varies
/// slowest). Errors are one line quoting the bad part and the expression, without a variable
/// name (callers prefix it). At most 1,048,576 names.
Result<std::vector<std::string>> expand_hostlist(const std::string& expr);

/// Expands Slurm's compressed per-node counts: `4(x3),2` → 4,4,4,2. Counts are positive.
/// Errors quote the bad item, without a variable name.
Result<std::vector<int>> expand_tasks_per_node(const std::string& text);

/// The hosts of the allocation described by `env` (variable → value): names from
/// SLURM_JOB_NODELIST (else SLURM_NODELIST), slots from SLURM_TASKS_PER_NODE (else
/// SLURM_NTASKS_PER_NODE for every node, else 1). `origin` is the node-list variable's name.
/// Errors name the variable and the bad token, e.g. when the counts do not match the nodes.
Result<HostList> hosts_from_slurm(const std::map<std::string, std::string>& env);

/// Whether ferryrun runs inside a Slurm allocation it may start steps in: SLURM_JOB_ID is set
/// and `srun` is on PATH.
bool in_slurm_allocation();

/// Whether every host of `hosts` is a node of the allocation (SLURM_JOB_NODELIST, else
/// SLURM_NODELIST); false outside one.
bool hosts_in_allocation(const HostList& hosts);

/// Whether `name` describes a Slurm job *step* and its task (SLURM_PROCID, SLURM_LOCALID,
/// SLURM_NODEID, SLURM_NTASKS, SLURM_STEP_*, SLURM_CPU_BIND*, ...) rather than the job. A
/// ferryd started by srun is task N of a one-task-per-node step; its ranks are not, and
/// would tell Lightning, mpi4py or submitit a wrong rank and size: ferryd removes these.
bool is_slurm_step_variable(std::string_view name);

}  // namespace ferry
