"""The recurrent_off_policy family: params, jobs, claims and tables."""
