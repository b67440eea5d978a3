import json
import sys

from .points import POINTS, measure

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in POINTS:
        sys.exit(f"usage: python -m aqmlab.bench {{{'|'.join(POINTS)}}}")
    print(json.dumps(measure(sys.argv[1])))
