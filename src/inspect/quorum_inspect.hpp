// The operator commands when -u names a quorum: status asks every node and says whether one token
// holds a majority; release goes to every node at once. list works on one node at a time.
#pragma once

#include "inspect/inspect.hpp"

namespace redlock {

// Exit 0 when one token holds the lock on a majority, 1 when none does; 69 when too few nodes
// answered to tell.
int quorum_status_command(const InspectOptions& options);

// --token T or --force on every node. Exit 0 when done everywhere; 1 (NotOwner) when no node
// held T but some held another token; 69 when a node did not answer (the others are released).
int quorum_release_command(const InspectOptions& options);

}  // namespace redlock
