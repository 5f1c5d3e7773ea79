"""verify/'s floor: the words every stage shares (what a trajectory must show, the checks and findings the judge
makes and every report renders, the measured spread), imported by every stage and importing none of them."""
