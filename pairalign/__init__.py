"""pairalign: exact all-pairs sequence alignment on GPUs and CPUs.

Global (Needleman-Wunsch), semiglobal (overlap) and local (Smith-Waterman)
alignment with affine gaps and a substitution matrix, for every pair of a set,
every query against every target, or one pair.
"""

from .alphabet import Alphabet
from .api import (Mode, SequenceLike, SequencesLike, align_all, align_many, align_pair, iter_all,
                  iter_many, load, load_pair, make_scoring, plan_all)
from .errors import (CPUFallbackWarning, DeviceError, DeviceErrorWarning, InputError,
                     MemoryBudgetWarning, OptionError, PairAlignError, PairAlignWarning)
from .results import AlignmentResult, PairAlignment
from .scoring import Scoring
from .sequences import SequenceRecords, read_sequences

__version__ = "0.1.0"

__all__ = ["align_all", "iter_all", "align_many", "iter_many", "align_pair", "plan_all",
           "load", "load_pair", "make_scoring", "AlignmentResult", "PairAlignment", "Scoring",
           "SequenceRecords", "read_sequences", "Mode", "Alphabet", "SequenceLike",
           "SequencesLike", "InputError", "OptionError", "PairAlignError",
           "DeviceError", "PairAlignWarning", "DeviceErrorWarning", "CPUFallbackWarning",
           "MemoryBudgetWarning", "__version__"]
