"""Review stage: the stratified queue (``sample``), decisions and their journal with undo
(``decisions``), the reviewer's way through the queue (``navigation``), a second reviewer's copy
(``merge``), agreement (``agreement``) and adjudication of conflicts (``adjudicate``)."""
