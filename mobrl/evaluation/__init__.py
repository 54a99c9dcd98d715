"""The evaluate pipeline: what a command acts on (`targets`), episodes of policies on paired
seeds and their files (`evaluate`), their statistics (`paired`) and the generalisation matrix
over layouts (`matrix`)."""
