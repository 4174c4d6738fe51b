"""The experience_replay family: params, jobs, claims and tables."""
