"""People's view of the grader: labels of the answers, golden transcripts, the ratings the agreement
figures read, and the review page where people label."""
