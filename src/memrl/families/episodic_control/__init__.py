"""The episodic_control family: params, jobs, claims and tables."""
