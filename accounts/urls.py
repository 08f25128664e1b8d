from django.urls import path

from accounts import views

urlpatterns = [
    path("verify", views.VerifyApi.as_view()),
    path("me/key", views.MeKeyApi.as_view()),
    path("users/me", views.UserMeApi.as_view()),
    path("invitations", views.InvitationCreateApi.as_view()),
    path("invitations/accept/<str:token>", views.InvitationAcceptApi.as_view()),
]
