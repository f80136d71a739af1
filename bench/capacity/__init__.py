"""How many voice sessions one box holds (`bench capacity`), and the Pipecat peer it compares
with."""
