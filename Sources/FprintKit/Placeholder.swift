import CFprint
