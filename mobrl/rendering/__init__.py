"""`mobrl render`: rollouts recorded headless (`video`), with mobrl's own frames of a
mobile-env network (`frames`)."""
